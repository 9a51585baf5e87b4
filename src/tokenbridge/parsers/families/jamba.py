"""Jamba JSON tool calls: ``<tool_calls>[{"name", "arguments"}, …]</tool_calls>``.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.declare import RenderRules
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import dumps_args, name_of
from tokenbridge.parsers.engine.call_list import StreamedCallList
from tokenbridge.parsers.registry import tool_parser


JAMBA_START, JAMBA_END = "<tool_calls>", "</tool_calls>"
_JAMBA_BLOCK = re.compile(f"{JAMBA_START}(.*?){JAMBA_END}", re.S)


def extract_jamba(text: str, ctx: ParseContext) -> Extraction:
    """Jamba ``<tool_calls>[{"name", "arguments"}, …]</tool_calls>``: only the first closed
    block counts; an unclosed block or any malformed entry makes it all content."""
    if JAMBA_START not in text:
        return as_content(text)
    m = _JAMBA_BLOCK.search(text)
    try:
        if m is None:
            raise ValueError("no closed tool call block")
        calls = [(name_of(c), dumps_args(c["arguments"])) for c in json.loads(m.group(1))]
    except Exception:
        return as_content(text)
    content = text[: text.find(JAMBA_START)]
    return Extraction(content if content not in ("", " ") else None, calls)


# vLLM keeps special tokens when tools are active.
JambaToolParser = tool_parser("jamba", family="jamba", render=RenderRules("with_tools"))(
    held_calls_parser(JsonFamily("jamba", extract_jamba, JAMBA_START))
)


class JambaStreamedCalls(StreamedCallList):
    """``jamba`` for ``--tool-call-streaming incremental``: content before ``<tool_calls>``
    streams, then the list's calls. Where the one-shot answer turns the whole output into
    content (an unclosed block, a malformed entry), the calls sent stand."""

    marker = JAMBA_START


JambaToolParser.incremental = JambaStreamedCalls
