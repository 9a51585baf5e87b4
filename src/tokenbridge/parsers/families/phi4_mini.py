"""Phi-4-mini JSON tool calls: ``functools[{…}, …]``, decided on the whole text.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolParser
from tokenbridge.parsers.choice import StreamedRequiredToolChoice
from tokenbridge.parsers.engine.json_calls import CallObject
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import call_from_object
from tokenbridge.parsers.registry import tool_parser


_PHI4_CALLS = re.compile(r"functools\[(.*?)\]", re.S)


def extract_phi4_mini(text: str, ctx: ParseContext) -> Extraction:
    """Phi-4-mini ``functools[{…}, …]``: the first ``functools[`` up to the first ``]``.

    Content is always null once that pattern matches; a body that is not valid JSON yields no
    calls at all (vLLM reports "tools called" with an empty list), while a valid array with a
    malformed entry makes the whole text content.
    """
    m = _PHI4_CALLS.search(text)
    if m is None:
        return as_content(text)
    try:
        entries = json.loads("[" + m.group(1) + "]")
    except json.JSONDecodeError:
        entries = []
    try:
        calls = [call_from_object(e, ("arguments", "parameters")) for e in entries]
    except Exception:
        return as_content(text)
    return Extraction(None, calls)


Phi4MiniJsonToolParser = tool_parser("phi4_mini_json", "phi4", family="phi4_mini_json")(
    held_calls_parser(JsonFamily("phi4_mini_json", extract_phi4_mini))
)


PHI4_MARKER = "functools["


class Phi4StreamState(ParserState):
    held: str = ""  # the text before the calls' marker (the content, null once the marker comes)
    calls: list | None = None  # the call list's parse position, from the marker on


class Phi4CallList(StreamedRequiredToolChoice):
    """The ``[{…}, …]`` after the marker: ``arguments`` (or ``parameters``) are the arguments."""

    @staticmethod
    def _new_call() -> CallObject:
        return CallObject(False, ("arguments", "parameters"), stop_at_close=True)


class Phi4MiniStreamedCalls(ToolParser):
    """``phi4_mini_json`` for ``--tool-call-streaming incremental``: the calls of the list after
    ``functools[`` open when their names close and their arguments stream re-serialized. The
    text before the marker is content only if no marker comes, so it is held until the marker
    (then dropped, as the one-shot answer's null content) or the end.

    The documented answer where the stream cannot be the one-shot one: malformed or truncated
    calls keep what was sent and the rest is dropped (the call list's answer); a ``]`` inside a
    call, which ends vLLM's call text early (it then finds no call), does not end it here.
    """

    streams_arguments = True
    State = Phi4StreamState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._list: Phi4CallList | None = None
        self.load(Phi4StreamState())

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if self._list is not None:
            return self._list.feed(text, token_ids)
        start = max(0, len(self.held) - len(PHI4_MARKER) + 1)
        self.held += text
        pos = self.held.find(PHI4_MARKER, start)
        if pos < 0:
            return Delta()
        rest, self.held = self.held[pos + len(PHI4_MARKER) - 1 :], ""
        self._list = Phi4CallList(self.ctx)
        return self._list.feed(rest, token_ids)

    def finish(self) -> Delta:
        held, self.held = self.held, ""
        return Delta(content=held)

    def snapshot(self) -> Phi4StreamState:
        self.calls = self._list.snapshot() if self._list is not None else None
        return super().snapshot()

    def load(self, state: ParserState) -> None:
        super().load(state)
        self._list = None
        if self.calls is not None:
            self._list = Phi4CallList(self.ctx)
            self._list.restore(self.calls)


Phi4MiniJsonToolParser.incremental = Phi4MiniStreamedCalls
