"""Hold-then-decide: the streaming shell of vLLM parsers whose answer is a function of the whole text.

vLLM's non-streaming answer for these families depends on text not seen yet (one invalid call
turns the whole output back into content; text before a call is kept or dropped depending on
whether every call parses), so the shell never guesses. Text that is content whatever follows
streams as it arrives, holding back only a possible partial marker; from the family's first
marker on, the text is held and handed once to the family's extraction, when the block closes
(``decision_end``) or the output ends. Every chunking therefore accumulates to the one-shot
result, and the state is the undecided text plus a mode and a flag.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from typing import Callable, ClassVar, Literal, NamedTuple

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ReasoningParser, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix


class Extraction(NamedTuple):
    """A family's one-shot answer: content (``None`` = vLLM's null) and ``(name, arguments)``."""

    content: str | None
    calls: list[tuple[str, str]]


def as_content(text: str) -> Extraction:
    """No calls: the text is the content as it came."""
    return Extraction(text, [])


def decided_delta(
    parser: ToolParser, result: Extraction, call_id: Callable[[int], str | None]
) -> Delta:
    """A held parser's whole answer as its last delta; null content is flagged on the parser."""
    if result.content is None:
        parser.null_content = True
    return Delta(
        content=result.content or "",
        tool_calls=[
            ToolCallDelta(index=i, name=name, arguments=args, id=call_id(i))
            for i, (name, args) in enumerate(result.calls)
        ],
    )


def random_uuid() -> str:
    """16 hex digits, the random part of vLLM's xLAM/Hunyuan tool-call ids."""
    return f"{uuid.uuid4().int & (1 << 64) - 1:016x}"


@dataclass(frozen=True)
class JsonFamily:
    """One marker + JSON body format."""

    name: str
    extract: Callable[[str, ParseContext], Extraction]
    # Content before the first of these markers is content whatever follows, so it may
    # stream; None means leading content depends on later text and everything is held until
    # finish().
    stream_before: str | tuple[str, ...] | None = None
    # Characters right before a marker that the extraction may strip from the content (held
    # back with the marker; e.g. ERNIE's ``rstrip("\n")``).
    hold_trailing: str = ""
    # The tool-call id the format defines for call ``index`` (None: derender assigns one).
    call_id: Callable[[int], str] | None = None

    @property
    def stream_markers(self) -> tuple[str, ...]:
        m = self.stream_before
        return () if m is None else (m,) if isinstance(m, str) else m


OPEN, HELD, DONE = "open", "held", "done"


class HeldState(ParserState):
    """The undecided text, where the parser is (``OPEN``: streaming content, ``HELD``,
    ``DONE``: decided) and whether content was emitted."""

    _buf: str
    _mode: Literal["open", "held", "done"]
    _emitted: bool


class HeldBlockParser(ToolParser):
    """The one hold-then-decide shell: subclasses give ``stream_markers`` (None: hold
    everything) and ``extract``, and may end the decision early with ``decision_end``."""

    State = HeldState
    #: vLLM returns ``content.strip()`` once calls were made.
    strip_content: ClassVar[bool] = False
    #: Leading blank text is held until something else arrives (vLLM streams none of it).
    holds_leading_blank: ClassVar[bool] = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.markers: tuple[str, ...] | None = self.stream_markers()
        self.hold_trailing = self.trailing_held()
        self._buf = ""
        self._mode = OPEN if self.markers is not None else HELD
        self._emitted = False

    def stream_markers(self) -> tuple[str, ...] | None:
        """Markers before which text is content whatever follows (None: nothing is)."""
        raise NotImplementedError

    def trailing_held(self) -> str:
        """Characters right before a marker that the extraction may strip from the content."""
        return ""

    def extract(self, text: str, at_start: bool) -> Extraction:
        """vLLM's answer for ``text``, the held rest of the output (its start if ``at_start``)."""
        raise NotImplementedError

    def decision_end(self, held: str) -> int | None:
        """End of the prefix of the held text that already decides the calls (None: not yet)."""
        return None

    def call_id(self, index: int) -> str | None:
        return None

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        self._buf += text
        if self._mode == DONE:
            out, self._buf = self._buf, ""
            return Delta(content=out)
        out = ""
        if self._mode == OPEN:
            out = self._stream_content()
        if self._mode == HELD:
            end = self.decision_end(self._buf)
            if end is not None:
                decided = self._decide(self._buf[:end])
                rest, self._buf, self._mode = self._buf[end:], "", DONE
                return Delta(out + decided.content + rest, tool_calls=decided.tool_calls)
        return Delta(content=out)

    def _stream_content(self) -> str:
        buf, markers = self._buf, self.markers or ()
        if not self._emitted and self.holds_leading_blank:
            if not buf or buf.isspace():
                return ""
            if self.strip_content and buf[0].isspace():
                self._mode = HELD
                return ""
        pos, _ = find_first(buf, markers)
        if pos != -1:
            self._mode = HELD
        else:
            pos = len(buf) - partial_suffix(buf, markers)
        trailing, strip = self.hold_trailing, self.strip_content
        while pos > 0 and (buf[pos - 1] in trailing or strip and buf[pos - 1].isspace()):
            pos -= 1
        out, self._buf = buf[:pos], buf[pos:]
        if out:
            self._emitted = True
        return out

    def _decide(self, text: str) -> Delta:
        return decided_delta(self, self.extract(text, not self._emitted), self.call_id)

    def finish(self) -> Delta:
        text, self._buf = self._buf, ""
        if self._mode == DONE or not text:
            return Delta(content=text)
        return self._decide(text)


class HeldCallsParser(HeldBlockParser):
    """A ``JsonFamily`` row run by the hold-then-decide shell."""

    family: ClassVar[JsonFamily]
    # vLLM routes tool_choice="required"/named through this parser (as "auto") when False.
    supports_required_and_named: ClassVar[bool] = True
    holds_leading_blank = False

    def stream_markers(self) -> tuple[str, ...] | None:
        return None if self.family.stream_before is None else self.family.stream_markers

    def trailing_held(self) -> str:
        return self.family.hold_trailing

    def extract(self, text: str, at_start: bool) -> Extraction:
        return self.family.extract(text, self.ctx)

    def call_id(self, index: int) -> str | None:
        make = self.family.call_id
        return make(index) if make is not None else None


def held_calls_parser(family: JsonFamily, *, supports_required_and_named: bool = True) -> type[HeldCallsParser]:
    """The parser class of one ``JsonFamily`` row, in the caller's module."""
    return type(
        f"{family.name.title().replace('_', '').replace('-', '')}ToolParser",
        (HeldCallsParser,),
        {
            "family": family,
            "name": family.name,
            "supports_required_and_named": supports_required_and_named,
            "__doc__": f"vLLM's ``{family.name}`` tool-call format.",
            "__module__": sys._getframe(1).f_globals["__name__"],
        },
    )


class BufferState(ParserState):
    """The output so far, held whole by a parser that decides only at the end."""

    buf: str
    bare_in_v2 = True


class WholeTextParser(ReasoningParser):
    """Buffers the output; ``split`` gives vLLM's ``(reasoning, content)`` for all of it."""

    State = BufferState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.buf = ""

    def split(self, text: str) -> tuple[str | None, str | None]:
        raise NotImplementedError

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        self.buf += text
        return "", ""

    def finish(self) -> tuple[str, str]:
        reasoning, content = self.split(self.buf)
        self.buf = ""
        self.empty_reasoning = None if reasoning is None else ""
        self.empty_content = None if content is None else ""
        return reasoning or "", content or ""



def decoded_prompt(prompt_token_ids: list[int], ctx: ParseContext) -> str | None:
    """The prompt as text, special tokens kept when the tokenizer can; None without a decoder."""
    decode = getattr(ctx.vocab, "decode", None)
    if decode is None:
        return None
    try:
        return decode(list(prompt_token_ids), skip_special_tokens=False)
    except TypeError:
        return decode(list(prompt_token_ids))
