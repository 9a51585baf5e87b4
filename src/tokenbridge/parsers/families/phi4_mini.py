"""Phi-4-mini JSON tool calls: ``functools[{…}, …]``, decided on the whole text.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.call_list import StreamedCallList
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


class Phi4MiniStreamedCalls(StreamedCallList):
    """``phi4_mini_json`` for ``--tool-call-streaming incremental``: the list after
    ``functools[``. The text before it is content only if no call list comes, so it is held.
    A ``]`` inside a call, which ends vLLM's call text early (it then finds no call), does not
    end the list here."""

    marker = "functools["
    args_keys = ("arguments", "parameters")
    holds_content = True


Phi4MiniJsonToolParser.incremental = Phi4MiniStreamedCalls
