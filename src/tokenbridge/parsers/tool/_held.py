"""The streaming shell of vLLM's hand-written ("legacy") tool parsers that decide on a whole block.

Their non-streaming answer is a function of the whole text, so the shell never guesses: content
before the family's first marker streams as it arrives (holding back a possible partial marker),
and from that marker on the text is held and handed once to the family's ``extract``. A family
whose block has a closing marker (``decision_end``) is decided as soon as it closes; what follows
is then plain content. Leading whitespace is held until real text arrives, since a blank answer
may become null; families whose content vLLM ``strip()``-s also hold trailing whitespace before a
marker, and hold everything when the output starts with whitespace.

``snapshot()`` is the undecided text plus a mode and one flag.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

from tokenbridge.parsers.base import Delta, ParseContext, ToolParser
from tokenbridge.parsers.text import find_first, partial_suffix
from tokenbridge.parsers.tool.json_tags import Extraction, decided_delta

OPEN, HELD, DONE = "open", "held", "done"


class HeldBlockParser(ToolParser):
    """Subclasses set ``markers`` (None: hold everything) and implement ``extract``."""

    #: vLLM returns ``content.strip()`` once calls were made.
    strip_content: ClassVar[bool] = False

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.markers: tuple[str, ...] | None = self.stream_markers()
        self._buf = ""
        self._mode = OPEN if self.markers is not None else HELD
        self._emitted = False

    def stream_markers(self) -> tuple[str, ...] | None:
        """Markers before which text is content whatever follows (None: nothing is)."""
        raise NotImplementedError

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
        if not self._emitted:
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
        if self.strip_content:
            while pos > 0 and buf[pos - 1].isspace():
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

    def snapshot(self) -> Any:
        return [self._buf, self._mode, self._emitted]

    def restore(self, snap: Any) -> None:
        if (
            not isinstance(snap, list)
            or len(snap) != 3
            or not isinstance(snap[0], str)
            or snap[1] not in (OPEN, HELD, DONE)
            or not isinstance(snap[2], bool)
        ):
            raise ValueError("bad held tool parser state")
        self._buf, self._mode, self._emitted = snap


def function_tools(ctx: ParseContext) -> Iterator[tuple[Any, Any]]:
    """``(name, parameters)`` of each function tool of the request, in order."""
    for tool in ctx.tools or []:
        if isinstance(tool, dict) and tool.get("type", "function") == "function":
            fn = tool.get("function") or {}
            yield fn.get("name"), fn.get("parameters")

