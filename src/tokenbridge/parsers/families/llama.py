"""Llama 3.x / 4 JSON tool calls: ``{"name": …, "parameters": …}`` objects, anywhere in the text
(the pythonic Llama formats are ``families/pythonic.py``).

vLLM 0.33 decides on the whole text (one invalid object makes it all content), so the text is
held until ``finish()``; the incremental parser streams the objects as written.
"""

from __future__ import annotations

import json

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.declare import CallSpelling, RenderRules, triggered_calls
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import call_from_object
from tokenbridge.parsers.engine.json_calls import StreamedBareJsonCalls
from tokenbridge.parsers.registry import tool_parser


LLAMA_BOT = "<|python_tag|>"
_DECODER = json.JSONDecoder()


def extract_llama_json(text: str, ctx: ParseContext) -> Extraction:
    """Llama 3.x/4 JSON calls: every ``{`` outside an already parsed object must start a
    ``{"name", "arguments" | "parameters"}`` object (separators such as ``; `` and any prose
    are ignored); otherwise the whole text is content. With calls, content is null.

    vLLM skips a ``{`` at or before the end index of the previous object, so an object glued
    to the previous one (``}{``) is skipped too.
    """
    if LLAMA_BOT not in text and "{" not in text:
        return as_content(text)
    end_index = -1
    calls: list[tuple[str, str]] = []
    start = text.find("{")
    while start != -1:
        if start > end_index:
            try:
                obj, length = _DECODER.raw_decode(text[start:])
                end_index = start + length
                calls.append(call_from_object(obj, ("arguments", "parameters")))
            except Exception:
                return as_content(text)
        start = text.find("{", start + 1)
    return Extraction(None, calls) if calls else as_content(text)


# vLLM's xgrammar structural tag "llama" makes "required"/named fall back to this parser's own
# extraction.
Llama3JsonToolParser = tool_parser(
    "llama3_json", "llama4_json", "llama", "llama3", family="llama3_json",
    render=RenderRules(
        structural_tag="llama",
        grammar=triggered_calls(CallSpelling('{"name": "', '", "parameters": ', "}"), '{"name": ', "json"),
    ),
)(
    held_calls_parser(JsonFamily("llama3_json", extract_llama_json), supports_required_and_named=False)
)
Llama3JsonToolParser.incremental = type("Llama3JsonStreamedCalls", (StreamedBareJsonCalls,), {"name": "llama3_json"})
