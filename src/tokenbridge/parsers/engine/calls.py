"""Tool calls read marker by marker: a family's markers move one small state machine.

Content comes first and is held while it is all whitespace (vLLM drops such content once a call
starts); a call collects its header in NAME and its body in ARGS and is emitted whole when it
ends. The family says what each marker does (Kimi K2's sections, DeepSeek's DSML invokes).
"""

from __future__ import annotations

from typing import Any

from tokenbridge.parsers.base import Delta, ParseContext, ToolParser
from tokenbridge.parsers.engine.lexer import scan_markers


# Engine parser states (plain strings keep the snapshot msgpack-able).
CONTENT, PREAMBLE, NAME, ARGS, BETWEEN = "content", "preamble", "name", "args", "between"


class EngineToolParser(ToolParser):
    """A family run through vLLM's declarative parser engine, read marker by marker.

    Content comes first and is held while it is all whitespace: vLLM drops such content once
    a call starts. A call collects its header in the NAME state and its body in ARGS, and is
    emitted whole when it ends. Subclasses set ``_markers`` (each marker's kind), move between
    states in ``_marker`` and emit a finished call in ``_end_call``.
    """

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._markers: dict[str, Any] = {}
        # Under "none" with tools vLLM's engine ignores calls, so whitespace content stays.
        self._drop_blank = not (ctx.tool_choice == "none" and ctx.tools)
        self._state = CONTENT
        self._pending = ""
        self._blank: str | None = ""  # content so far while it is all whitespace
        self._header = ""
        self._body = ""
        self._index = 0

    def _marker(self, marker: str, out: Delta) -> None:
        raise NotImplementedError

    def _end_call(self, out: Delta) -> None:
        raise NotImplementedError

    def _text(self, text: str, out: Delta) -> None:
        if not text:
            return
        if self._state == CONTENT:
            if self._blank is not None:
                self._blank += text
                if not self._blank.strip():
                    return
                text, self._blank = self._blank, None
            out.content += text
        elif self._state == NAME:
            self._header += text
        elif self._state == ARGS:
            self._body += text

    def _move(self, nxt: str, out: Delta) -> None:
        """Into state ``nxt``: leaving ARGS ends the call, entering NAME starts the next."""
        if self._state == ARGS:
            self._end_call(out)
        if nxt == NAME:
            if self._drop_blank and self._blank is not None:
                self._blank = ""
            self._header, self._body = "", ""
        self._state = nxt

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        self._pending = scan_markers(
            self._pending + text,
            self._markers,
            lambda piece: self._text(piece, out),
            lambda marker: self._marker(marker, out),
        )
        return out

    def finish(self) -> Delta:
        """The held-back tail as text, an open call ended, held whitespace content released."""
        out = Delta(tool_calls=[])
        text, self._pending = self._pending, ""
        self._text(text, out)
        if self._state in (NAME, ARGS):
            self._end_call(out)
            self._state = BETWEEN
        if self._blank:
            out.content += self._blank
        self._blank = ""
        return out
