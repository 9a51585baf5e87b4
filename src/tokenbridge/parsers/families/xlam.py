"""xLAM JSON tool calls: a ``[{"name", "arguments"}, …]`` array, wherever xLAM writes it.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser, random_uuid
from tokenbridge.parsers.engine.json import named_calls
from tokenbridge.parsers.registry import tool_parser


_XLAM_BLOCKS = (
    re.compile(r"```(?:json)?\s*([\s\S]*?)```"),
    re.compile(r"\[TOOL_CALLS\]([\s\S]*?)(?=\n|$)"),
    re.compile(r"<tool_call>([\s\S]*?)</tool_call>"),
)
_XLAM_AFTER_THINK = re.compile(r"</think>([\s\S]*)")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _xlam_split(text: str) -> tuple[str | None, str | None]:
    """``(content, calls JSON)`` the way xLAM locates its call array."""
    m = _XLAM_AFTER_THINK.search(text)
    if m:
        head = text[: m.start() + len("</think>")].strip()
        tail = m.group(1).strip()
        if _is_json(tail):
            return head, tail
        for pattern in _XLAM_BLOCKS:
            found = next((b for b in pattern.findall(tail) if _is_json(b)), None)
            if found is not None:
                return head, found
    for pattern in _XLAM_BLOCKS:
        blocks = pattern.findall(text)
        found = next((b for b in blocks if _is_json(b)), None)
        if found is not None:
            return pattern.sub("", text).strip(), found
    if text.strip().startswith("["):
        if _is_json(text) or ("{" in text and "name" in text and "arguments" in text):
            return None, text
    return text, None


def extract_xlam(text: str, ctx: ParseContext) -> Extraction:
    """xLAM: a JSON array of ``{"name", "arguments"}`` found after ``</think>``, in a code
    fence, after ``[TOOL_CALLS]``, inside ``<tool_call>`` or as the whole output; entries
    without both keys are skipped. Content is the text with the located block removed."""
    try:
        content, raw = _xlam_split(text)
        if not raw:
            return as_content(text)
        data = json.loads(raw)
        if not isinstance(data, list):
            return as_content(text)
        calls = named_calls(data)
    except Exception:
        return as_content(text)
    return Extraction(content, calls) if calls else as_content(text)


tool_parser("xlam", family="xlam")(
    held_calls_parser(JsonFamily("xlam", extract_xlam, call_id=lambda index: f"call_{index}_{random_uuid()}"))
)
