"""Olmo 3 reasoning: optional plain-text ``<think>``, reasoning up to the first ``</think>``.

Its tool calls are the ``olmo3`` variant of the pythonic call list (``families/pythonic.py``).
"""

from __future__ import annotations

import re

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolParser
from tokenbridge.parsers.engine.held import WholeTextParser
from tokenbridge.parsers.engine.lexer import partial_suffix, token_id
from tokenbridge.parsers.engine.python_calls import PythonCallsState, PythonCallStream
from tokenbridge.parsers.families.pythonic import Olmo3ToolParser
from tokenbridge.parsers.registry import reasoning_parser


@reasoning_parser("olmo3", family="olmo3")
class Olmo3ReasoningParser(WholeTextParser):
    """Olmo 3: an optional leading ``<think>``, reasoning up to the first ``</think>``; without
    an end marker the whole output is content. Both markers are plain text, not tokens."""

    name = "olmo3"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """``</think>`` as its pre-token pieces: ``</`` (or ``Ġ</``), ``think``, ``>``."""
        vocab = ctx.vocab
        first = {token_id(vocab, t) for t in ("Ġ</", "</")} - {None}
        rest = [token_id(vocab, t) for t in ("think", ">")]
        if not first or None in rest:
            return False
        ids = prompt_token_ids
        return any(
            ids[i] in first and ids[i + 1 : i + 3] == rest for i in range(len(ids) - 2)
        )

    def split(self, text: str) -> tuple[str | None, str | None]:
        body = text.removeprefix("<think>")
        reasoning, found, content = body.partition("</think>")
        if not found:
            return None, text
        return reasoning or None, content or None


# Where the incremental tool parser is.
LINES, WAIT, BLOCK, AFTER_BLOCK, CONTENT = range(5)
_BLOCK_OPEN, _BLOCK_CLOSE = "<function_calls>", "</function_calls>"
#: ``str.splitlines`` boundaries (a blank line between two of them is skipped anyway).
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


class Olmo3StreamedState(ParserState):
    where: int = LINES
    held: str = ""  # the output while no call is open (all of it is content if none opens)
    buf: str = ""  # a partial block marker
    fresh: bool = True  # at the start of a line
    gap: str = ""  # whitespace inside a line (dropped if the line ends there)
    lines: int = 0  # the lines given to the list so far
    calls: PythonCallsState | None = None


class Olmo3StreamedCalls(ToolParser):
    """``olmo3`` for ``--tool-call-streaming incremental``: one call per line, read as the list
    vLLM makes of them (``[`` + the stripped non-blank lines joined by ``", "`` + ``]``) by the
    pythonic reader, each call sent when its ``(`` is read.

    The lines are the whole output, or those of a ``<function_calls>`` block when the output's
    own lines do not open a call. Until a call opens the output is held (as in ``whole`` mode);
    if none opens it is all content. The documented answer once a call opened: a list that
    breaks, or is cut, keeps the calls sent and the rest is dropped (it was read as list
    source, not as written); so is text after the block.
    """

    name = "olmo3"
    streams_arguments = True
    State = Olmo3StreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(Olmo3StreamedState())

    def _lines(self, text: str) -> str:
        """``text`` as list source: each line stripped, blank lines skipped, ``", "`` between."""
        out = []
        for k, line in enumerate(_LINE_BREAKS.split(text)):
            if k:
                self.fresh, self.gap = True, ""
            body = line.strip() if self.fresh else line.rstrip()
            if not body:
                if not self.fresh:
                    self.gap += line
                continue
            if self.fresh:
                out.append(", " if self.lines else "")
                self.lines += 1
            else:
                out.append(self.gap)
            out.append(body)
            self.fresh, self.gap = False, line[len(line.rstrip()):]
        return "".join(out)

    def _read(self, source: str, out: Delta) -> None:
        calls = self._calls
        opened = calls.s.index >= 0
        out.tool_calls += calls.feed(source)
        if not opened and calls.s.index >= 0:
            self.held = ""
        if calls.broken is not None:
            if calls.s.index < 0:
                self.where = WAIT if self.where == LINES else CONTENT
                if self.where == CONTENT:
                    out.content, self.held = self.held, ""
            else:  # the calls sent stand; the rest (read as list source) is dropped
                self.where = AFTER_BLOCK

    def _start_block(self, text: str, out: Delta) -> None:
        self._calls = PythonCallStream()
        self.fresh, self.gap, self.lines, self.where = True, "", 0, BLOCK
        self._read("[", out)
        self._block(text, out)

    def _block(self, text: str, out: Delta) -> None:
        buf = self.buf + text
        end = buf.find(_BLOCK_CLOSE)
        keep = 0 if end >= 0 else partial_suffix(buf, (_BLOCK_CLOSE,))
        self.buf = buf[len(buf) - keep:] if end < 0 else ""
        self._read(self._lines(buf[:end] if end >= 0 else buf[: len(buf) - keep]), out)
        if end >= 0 and self.where == BLOCK:
            self._read("]", out)
            if self.where == BLOCK:
                if self._calls.s.index < 0:
                    self.where, out.content, self.held = CONTENT, self.held, ""
                else:
                    self.where = AFTER_BLOCK
        if self.where != BLOCK:
            self.buf = ""

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        where = self.where
        if where == CONTENT:
            out.content = text
        elif where in (LINES, WAIT, BLOCK) and text:
            if self._calls.s.index < 0:
                self.held += text
            if where == LINES:
                self._read(self._lines(text), out)
                if self.where == WAIT:
                    where, self.buf, text = WAIT, "", self.held
            if where == WAIT:
                buf = self.buf + text
                start = buf.find(_BLOCK_OPEN)
                if start < 0:
                    self.buf = buf[len(buf) - partial_suffix(buf, (_BLOCK_OPEN,)):]
                else:
                    self.buf = ""
                    self._start_block(buf[start + len(_BLOCK_OPEN):], out)
            elif where == BLOCK:
                self._block(text, out)
        return out

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == LINES:
            self._read("]", out)
        if self.where in (LINES, WAIT, BLOCK) and self._calls.s.index < 0:
            out.content = self.held
        self.where, self.held, self.buf = CONTENT, "", ""
        return out

    def snapshot(self) -> Olmo3StreamedState:
        self.calls = self._calls.snapshot() if self.where in (LINES, BLOCK) else None
        return super().snapshot()

    def load(self, state: Olmo3StreamedState) -> None:
        super().load(state)
        self._calls = PythonCallStream()
        if self.calls is not None:
            self._calls.load(self.calls)
        elif self.where == LINES:
            self._calls.feed("[")
        self.calls = None


Olmo3ToolParser.incremental = Olmo3StreamedCalls
