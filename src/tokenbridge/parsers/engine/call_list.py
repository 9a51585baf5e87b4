"""A JSON list of call objects (``marker[{…}, …]``) streamed call by call: the reader behind
``tool_choice=required``, phi4_mini_json and jamba, built on ``json_calls.CallObject``."""

from __future__ import annotations

from typing import ClassVar

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.json_calls import JSON_WHITESPACE, CallObject, CallObjectState, OpenCall
from tokenbridge.parsers.engine.lexer import partial_suffix


# Positions in a list of call objects.
LIST_OPEN, ITEM_OR_CLOSE, ITEM, AFTER_ITEM, LIST_DONE, LIST_BROKEN = range(6)


class CallListState(ParserState):
    before: str = ""  # text before the marker, while it is not decided (``holds_content``) or may be it
    pos: int = LIST_OPEN  # where in the list (before the marker: LIST_OPEN with ``marked`` False)
    marked: bool = False  # the marker was read
    index: int = 0  # the next call's index
    call: CallObjectState | None = None  # the open call's parse position

    def check(self) -> None:
        if self.call is not None and self.pos not in (ITEM_OR_CLOSE, ITEM):
            raise ValueError("bad tool parser state: a call is open only at an item")


class StreamedCallList(OpenCall, ToolParser):
    """``marker[{…}, …]``: a JSON list of call objects, each opening a call when its name closes
    and streaming its arguments re-serialized (``json_stream``); text after the list is dropped.

    Before the marker (none: the list starts the output) the text is content: streamed, or with
    ``holds_content`` held until the marker (then dropped: the one-shot content is null) or the
    end. Malformed or truncated output: the calls sent stand and the rest is dropped (the
    one-shot answer of a malformed list has no calls).
    """

    marker: ClassVar[str] = ""
    args_keys: ClassVar[tuple[str, ...]] = ("arguments",)
    args_first: ClassVar[str | None] = None
    missing_args: ClassVar[str | None] = None
    holds_content: ClassVar[bool] = False
    streams_arguments = True
    State = CallListState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(CallListState(marked=not self.marker))

    def _new_call(self) -> CallObject:
        return CallObject(False, self.args_keys, stop_at_close=True, args_first=self.args_first,
                          missing_args=self.missing_args)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if not self.marked:
            text = self._before(text, out)
        self._list(text, out)
        return out

    def finish(self) -> Delta:
        before, self.before = self.before, ""
        return Delta(content=before if not self.marked else "")

    def _before(self, text: str, out: Delta) -> str:
        """Content up to the marker; returns the text from the list's ``[`` on (or "")."""
        start = max(0, len(self.before) - len(self.marker) + 1)
        buf = self.before + text
        pos = buf.find(self.marker, start)
        if pos < 0:
            keep = len(buf) if self.holds_content else partial_suffix(buf, (self.marker,))
            out.content += buf[: len(buf) - keep]
            self.before = buf[len(buf) - keep :]
            return ""
        if not self.holds_content:
            out.content += buf[:pos]
        self.before, self.marked = "", True
        rest = buf[pos + len(self.marker) :]
        return "[" + rest if self.marker.endswith("[") else rest

    def _list(self, text: str, out: Delta) -> None:
        i, n = 0, len(text)
        while i < n and self.pos not in (LIST_DONE, LIST_BROKEN):
            if self._call is not None:
                name, args, used = self._call.feed(text[i:])
                if name is not None or args:
                    out.tool_calls.append(ToolCallDelta(self.index, name=name, arguments=args))
                i += used
                if self._call.broken is not None:
                    self.pos, self._call = LIST_BROKEN, None
                elif self._call.complete:
                    self.pos, self._call, self.index = AFTER_ITEM, None, self.index + 1
                continue
            c = text[i]
            i += 1
            if c in JSON_WHITESPACE:
                continue
            pos = self.pos
            if pos == LIST_OPEN and c == "[":
                self.pos = ITEM_OR_CLOSE
            elif pos in (ITEM_OR_CLOSE, ITEM) and c == "{":
                self._call, i = self._new_call(), i - 1
            elif pos in (ITEM_OR_CLOSE, AFTER_ITEM) and c == "]":
                self.pos = LIST_DONE
            elif pos == AFTER_ITEM and c == ",":
                self.pos = ITEM
            else:
                self.pos = LIST_BROKEN
