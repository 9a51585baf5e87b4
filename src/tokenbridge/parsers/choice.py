"""``tool_choice`` modes that are not a family format: a named function and ``required``.

vLLM constrains the output to JSON for these, so parsing does not depend on the family:
a named choice's whole content is the arguments; ``required`` is a JSON list of
``{"name", "parameters"}`` objects.
"""

from __future__ import annotations

import json

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.held import BufferState
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.call_list import StreamedCallList


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

    State = BufferState

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



class StreamedRequiredToolChoice(StreamedCallList):
    """``required`` for ``--tool-call-streaming incremental``: each ``{"name", "parameters"}``
    item of the list opens a call when its name is read, and its parameters stream as they are
    re-serialized. A missing ``parameters`` is ``null``, as in the one-shot answer.

    Malformed output: the calls sent stand and the rest is dropped (the one-shot answer of a
    malformed list has neither calls nor content).
    """

    args_keys = ("parameters",)
    args_first = "{n"
    missing_args = "null"


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
        self.snapshot, self.restore = inner.snapshot, inner.restore  # its state is the family parser's

    def _content(self, d: Delta) -> Delta:
        if d.tool_calls and self.inner.nulls_blank_content_under_none:
            self.found_calls = True
        return Delta(content=d.content)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        return self._content(self.inner.feed(text, token_ids))

    def finish(self) -> Delta:
        return self._content(self.inner.finish())
