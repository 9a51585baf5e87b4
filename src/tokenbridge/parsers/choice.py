"""``tool_choice`` modes that are not a family format: a named function and ``required``.

vLLM constrains the output to JSON for these, so parsing does not depend on the family:
a named choice's whole content is the arguments; ``required`` is a JSON list of
``{"name", "parameters"}`` objects.
"""

from __future__ import annotations

import json

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.json_calls import CallObject


class NamedState(ParserState):
    pending: str  # blank content so far
    started: bool  # the call is open: content is its arguments


class NamedToolChoice(ToolParser):
    """Streams the content as the arguments of the named function once it is non-blank."""

    State = NamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.fn = (ctx.tool_choice.get("function") or {}).get("name")
        self.pending = ""
        self.started = False

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if self.started:
            return Delta(tool_calls=[ToolCallDelta(0, arguments=text)]) if text else Delta()
        self.pending += text
        if not self.pending.strip():
            return Delta()
        self.started = True
        args, self.pending = self.pending, ""
        return Delta(tool_calls=[ToolCallDelta(0, name=self.fn, arguments=args)])

    def finish(self) -> Delta:
        return Delta()



class RequiredToolChoice(ToolParser):
    """Holds the JSON list until the end: a partial list cannot be validated."""

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.buf = ""

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        self.buf += text
        return Delta()

    def finish(self) -> Delta:
        try:
            items = json.loads(self.buf)
        except ValueError:
            return Delta()
        if not isinstance(items, list) or not all(
            isinstance(i, dict) and isinstance(i.get("name"), str) and isinstance(i.get("parameters", {}), (dict, type(None)))
            for i in items
        ):
            return Delta()
        return Delta(
            tool_calls=[
                ToolCallDelta(n, name=i["name"], arguments=dumps_args(i.get("parameters")))
                for n, i in enumerate(items)
            ]
        )

    def snapshot(self):
        return self.buf

    def restore(self, snap) -> None:
        if not isinstance(snap, str):
            raise ValueError("bad tool parser state")
        self.buf = snap


LIST_OPEN, ITEM_OR_CLOSE, ITEM, ITEM_CALL, AFTER_ITEM, LIST_DONE, LIST_BROKEN = range(7)
_JSON_WS = " \t\n\r"


class StreamedRequiredToolChoice(ToolParser):
    """``required`` for ``--tool-call-streaming incremental``: each ``{"name", "parameters"}``
    item of the list opens a call when its name is read, and its parameters stream as they are
    re-serialized. A missing ``parameters`` is ``null``, as in the one-shot answer.

    Malformed output: the calls sent stand and the rest is dropped (the one-shot answer of a
    malformed list has neither calls nor content).
    """

    streams_arguments = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._pos = LIST_OPEN
        self._index = 0
        self._call: CallObject | None = None

    def _new_call(self) -> CallObject:
        return CallObject(False, ("parameters",), stop_at_close=True, args_first="{n", missing_args="null")

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        calls: list[ToolCallDelta] = []
        i, n = 0, len(text)
        while i < n and self._pos != LIST_BROKEN:
            if self._pos == ITEM_CALL:
                name, args, used = self._call.feed(text[i:])
                if name is not None or args:
                    calls.append(ToolCallDelta(self._index, name=name, arguments=args))
                i += used
                if self._call.broken is not None:
                    self._pos, self._call = LIST_BROKEN, None
                elif self._call.complete:
                    self._pos, self._call, self._index = AFTER_ITEM, None, self._index + 1
                continue
            c = text[i]
            i += 1
            if c in _JSON_WS:
                continue
            pos = self._pos
            if pos == LIST_OPEN and c == "[":
                self._pos = ITEM_OR_CLOSE
            elif pos in (ITEM_OR_CLOSE, ITEM) and c == "{":
                self._pos, self._call, i = ITEM_CALL, self._new_call(), i - 1
            elif (pos == ITEM_OR_CLOSE or pos == AFTER_ITEM) and c == "]":
                self._pos = LIST_DONE
            elif pos == AFTER_ITEM and c == ",":
                self._pos = ITEM
            else:
                self._pos = LIST_BROKEN
        return Delta(tool_calls=calls)

    def snapshot(self):
        return [self._pos, self._index, self._call.snapshot() if self._call is not None else None]

    def restore(self, snap) -> None:
        if (not isinstance(snap, list) or len(snap) != 3 or snap[0] not in range(7)
                or not isinstance(snap[1], int) or (snap[2] is None) != (snap[0] != ITEM_CALL)):
            raise ValueError("bad tool parser state")
        self._pos, self._index = snap[0], snap[1]
        self._call = None
        if snap[2] is not None:
            self._call = self._new_call()
            self._call.restore(snap[2])


class DropToolCalls(ToolParser):
    """``tool_choice="none"`` on an engine-based family: its content, never its calls.

    vLLM still parses; for families whose parser nulls blank content once it has found a call
    (``nulls_blank_content_under_none``), ``found_calls`` tells the choice parser to do so.
    """

    engine_based = True

    def __init__(self, inner: ToolParser) -> None:
        super().__init__(inner.ctx)
        self.inner = inner
        self.blank_content_is_null = inner.blank_content_is_null
        self.found_calls = False

    def _content(self, d: Delta) -> Delta:
        if d.tool_calls and self.inner.nulls_blank_content_under_none:
            self.found_calls = True
        return Delta(content=d.content)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        return self._content(self.inner.feed(text, token_ids))

    def finish(self) -> Delta:
        return self._content(self.inner.finish())

    def snapshot(self):
        return self.inner.snapshot()

    def restore(self, snap) -> None:
        self.inner.restore(snap)
