"""Hermes-style tool calls: ``<tool_call>{"name", "arguments"}</tool_call>`` (Hermes, Qwen 2.5,
Qwen3 JSON) and LongCat's ``<longcat_tool_call>`` spelling of the same.

vLLM 0.33 decides on the whole text (``engine/held.py`` holds it from the first marker); the
incremental parsers stream the calls as written (``engine/json_calls.py``).
"""

from __future__ import annotations

import json
from typing import Callable

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.declare import RenderRules, hermes_style
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import call_from_object
from tokenbridge.parsers.engine.json_calls import StreamedJsonCalls
from tokenbridge.parsers.registry import tool_parser


def extract_tagged(start: str, end: str) -> Callable[[str, ParseContext], Extraction]:
    """Hermes-style ``<start>{"name", "arguments"}<end>`` calls.

    Every start marker opens a call whose body runs to the next end marker, or to the end of
    the text when none follows. Any body that is not a ``{"name": str, "arguments": …}`` object
    makes the whole text content. Content is the text before the first start marker; text
    between and after calls is dropped.
    """

    def bodies(text: str) -> list[str]:
        """vLLM's ``findall`` of ``start(.*?)end|start(.*)`` (DOTALL), by ``str.find``."""
        out, pos = [], text.find(start)
        while pos != -1:
            pos += len(start)
            close = text.find(end, pos)
            if close == -1:
                out.append(text[pos:])
                break
            out.append(text[pos:close])
            pos = text.find(start, close + len(end))
        return out

    def extract(text: str, ctx: ParseContext) -> Extraction:
        if start not in text:
            return as_content(text)
        try:
            calls = [call_from_object(json.loads(body), ("arguments",)) for body in bodies(text)]
        except Exception:
            return as_content(text)
        return Extraction(text[: text.find(start)] or None, calls)

    return extract


# vLLM's xgrammar structural tags (hermes, longcat) make "required"/named fall back to
# this parser's own extraction.
HermesToolParser = tool_parser(
    "hermes", "qwen3_json", "qwen", "qwen25", "qwen3", family="hermes",
    render=RenderRules("with_tools", "hermes", grammar=hermes_style("<tool_call>", "</tool_call>")),
)(
    held_calls_parser(
        JsonFamily("hermes", extract_tagged("<tool_call>", "</tool_call>"), "<tool_call>"),
        supports_required_and_named=False,
    )
)
LongcatToolParser = tool_parser("longcat", family="hermes")(
    held_calls_parser(
        JsonFamily("longcat", extract_tagged("<longcat_tool_call>", "</longcat_tool_call>"), "<longcat_tool_call>"),
        supports_required_and_named=False,
    )
)


def streamed_calls(family: str, start: str, end: str) -> type:
    """The incremental parser of a ``<start>{"name", "arguments"}<end>`` family."""
    return type(
        f"{family.title()}StreamedCalls",
        (StreamedJsonCalls,),
        {"name": family, "start": start, "end": end, "__doc__": f"``{family}`` calls streamed as written."},
    )


HermesToolParser.incremental = streamed_calls("hermes", "<tool_call>", "</tool_call>")
LongcatToolParser.incremental = streamed_calls("longcat", "<longcat_tool_call>", "</longcat_tool_call>")
