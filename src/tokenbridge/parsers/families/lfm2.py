"""LiquidAI LFM2 ``<|tool_call_start|>[fn(a=1), …]<|tool_call_end|>``: a pythonic call list
between markers, as vLLM 0.33 reads it (non-streaming).

Only the first start marker counts; without an end marker the call list runs to the end of
the text. The stripped list must be ``[…]`` and parse as a non-empty list of calls with literal
keyword arguments (:mod:`pythonic`'s rules), else the whole text is content. Content is the
stripped text before the block and the stripped text after it, joined by a newline; after the
block, anything up to a repeated end marker is the model echoing its call and is dropped.

vLLM additionally repairs some invalid Python (raw control characters and nested quotes in
strings, leading-zero integers, reserved-word keywords) before giving up; such outputs stay
content here.
"""

from __future__ import annotations

import ast
import json
import re
import warnings

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, as_content
from tokenbridge.parsers.engine.lexer import partial_suffix
from tokenbridge.parsers.engine.python_calls import PythonCallsState, PythonCallStream
from tokenbridge.parsers.families.pythonic import dotted_name, literal_value

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
_LIST = re.compile(r"\[.*\]$", re.S)


def call_list(source: str) -> list[tuple[str, str]] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = getattr(ast.parse(source).body[0], "value", None)
        if not isinstance(value, ast.List) or not value.elts:
            return None
        if not all(isinstance(e, ast.Call) for e in value.elts):
            return None
        return [
            (
                dotted_name(call.func),
                json.dumps({kw.arg: literal_value(kw.value) for kw in call.keywords}, ensure_ascii=False),
            )
            for call in value.elts
        ]
    except Exception:
        return None


def extract_lfm2(text: str, ctx: ParseContext) -> Extraction:
    start = text.find(START)
    if start == -1:
        return as_content(text)
    end = text.find(END, start)
    body_end = len(text) if end == -1 else end
    source = text[start + len(START) : body_end].strip()
    calls = call_list(source) if _LIST.match(source) else None
    if calls is None:
        return as_content(text)
    parts = [text[:start].strip()]
    if end != -1:
        after = text[end + len(END) :]
        echo = after.rfind(END)
        parts.append((after[echo + len(END) :] if echo != -1 else after).strip())
    return Extraction("\n".join(p for p in parts if p) or None, calls)


@tool_parser("lfm2", family="lfm2")
class Lfm2ToolParser(HeldCallsParser):
    """vLLM's ``lfm2`` tool-call format."""

    family = JsonFamily("lfm2", extract_lfm2)


# Where the incremental parser is.
BEFORE, LIST, AFTER_LIST, TAIL, CONTENT = range(5)


class Lfm2StreamedState(ParserState):
    where: int = BEFORE
    held: str = ""  # the output while no call is open (all of it is content if none opens)
    before: str = ""  # the text before the start marker, stripped
    buf: str = ""  # a partial end marker
    tail: str = ""  # the text after the end marker (content, once the echo rule has read it)
    calls: PythonCallsState | None = None


class Lfm2StreamedCalls(ToolParser):
    """``lfm2`` for ``--tool-call-streaming incremental``: the call list after the start marker
    read as it is written (``engine.python_calls``, as ``ast`` reads it), each call sent when its
    ``(`` is read.

    The text before the marker is held, as in ``whole`` mode, and sent stripped when the first
    call opens; the text after the end marker is held to the end (an echo of the call up to a
    repeated end marker is dropped). A list that breaks before its first call opens leaves the
    whole output content, as the one-shot answer does. The documented answer for the rest: a
    list that breaks later, or text between it and the end marker, keeps the calls sent and the
    text from there on is content; a list cut by the end marker or the output's end keeps the
    calls sent.
    """

    name = "lfm2"
    streams_arguments = True
    State = Lfm2StreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._calls = PythonCallStream(pattern=False)
        self.load(Lfm2StreamedState())

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == BEFORE:
            self.held += text
            start = self.held.find(START)
            if start < 0:
                return out
            self.before = self.held[:start].strip()
            text, self.where = self.held[start + len(START):], LIST
            self.held = self.held[: start + len(START)]
        if self.where in (LIST, AFTER_LIST):
            buf = self.buf + text
            end = buf.find(END)
            if end >= 0:
                piece, rest, self.buf = buf[:end], buf[end:], ""
            else:
                keep = partial_suffix(buf, (END,))
                piece, rest, self.buf = buf[: len(buf) - keep], "", buf[len(buf) - keep:]
            text = self._list(piece, out)
            if self.where == CONTENT:
                text, self.buf = text + rest + self.buf, ""
            elif end >= 0:
                text = rest[len(END):]
                if self._calls.s.index < 0:  # the list never opened a call: all is content
                    out.content, self.where = self.held + END, CONTENT
                else:
                    self.where = TAIL
        if self.where == TAIL:
            self.tail += text
        elif self.where == CONTENT:
            out.content += text
        return out

    def _list(self, piece: str, out: Delta) -> str:
        """Reads list text; returns the text that is content once the list breaks."""
        calls = self._calls
        if self.where == AFTER_LIST:
            return self._after_list(piece)
        opened = calls.s.index >= 0
        out.tool_calls = calls.feed(piece)
        if not opened:
            if calls.s.index < 0 and calls.broken is None:
                self.held += piece
                return ""
            if calls.s.index < 0:
                self.where = CONTENT
                return self.held + piece
            out.content, self.held = self.before, ""
        if calls.broken is not None:
            self.where = CONTENT
            return calls.broken
        if calls.done:
            self.where = AFTER_LIST
            return self._after_list(calls.rest)
        return ""

    def _after_list(self, text: str) -> str:
        if text.strip():
            self.where = CONTENT
            return text.lstrip()
        return ""

    def finish(self) -> Delta:
        where, self.where = self.where, CONTENT
        if where == BEFORE or (where == LIST and self._calls.s.index < 0):
            return Delta(content=self.held + self.buf)
        if where == AFTER_LIST:
            return Delta(content=self.buf if self.buf.strip() else "")
        if where != TAIL:
            return Delta()
        echo = self.tail.rfind(END)
        tail = (self.tail[echo + len(END):] if echo >= 0 else self.tail).strip()
        return Delta(content=("\n" if self.before and tail else "") + tail)

    def snapshot(self) -> Lfm2StreamedState:
        self.calls = self._calls.snapshot() if self.where in (LIST, AFTER_LIST) else None
        return super().snapshot()

    def load(self, state: Lfm2StreamedState) -> None:
        super().load(state)
        self._calls = PythonCallStream(pattern=False)
        if self.calls is not None:
            self._calls.load(self.calls)
        self.calls = None


Lfm2ToolParser.incremental = Lfm2StreamedCalls
