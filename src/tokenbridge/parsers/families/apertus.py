"""Apertus JSON tool calls: ``<|tools_prefix|>[{"fn": {args}}, …]<|tools_suffix|>``.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import complete_truncated_json, dumps_args
from tokenbridge.parsers.registry import tool_parser


_DECODER = json.JSONDecoder()
APERTUS_PREFIX, APERTUS_SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
_APERTUS_BLOCK = re.compile(f"{re.escape(APERTUS_PREFIX)}(.*?)(?:{re.escape(APERTUS_SUFFIX)}|$)", re.S)


def extract_apertus(text: str, ctx: ParseContext) -> Extraction:
    """Apertus ``<|tools_prefix|>[{"fn": {args}}, …]<|tools_suffix|>``: each non-empty object's
    first member is a call. A truncated array is completed (length cut); text after the JSON
    and after the suffix joins the stripped leading content with newlines."""
    m = _APERTUS_BLOCK.search(text)
    if m is None:
        return as_content(text)
    group = m.group(1)
    stripped = group.lstrip()
    try:
        try:
            parsed, end = _DECODER.raw_decode(stripped)
            trailing = stripped[end:]
        except json.JSONDecodeError:
            parsed, trailing = complete_truncated_json(group), ""
        entries = parsed if isinstance(parsed, list) else [parsed] if parsed else []
        calls = [
            (next(iter(e)), dumps_args(next(iter(e.values()))))
            for e in entries
            if isinstance(e, dict) and e
        ]
    except Exception:
        return as_content(text)
    content = text[: m.start()].strip()
    for extra in (trailing.replace(APERTUS_SUFFIX, "") if trailing.strip() else "",
                  text[m.end() :].replace(APERTUS_SUFFIX, "")):
        if extra.strip():
            content = (content + "\n" + extra.strip()).strip()
    return Extraction(content or None, calls)


tool_parser("apertus", "apertus2509", family="apertus")(held_calls_parser(JsonFamily("apertus", extract_apertus)))
