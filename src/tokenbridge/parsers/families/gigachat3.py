"""GigaChat 3 JSON tool calls: one ``{"name", "arguments"}`` object after ``function call<|role_sep|>``.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.registry import tool_parser


GIGACHAT_MARKERS = ("<|message_sep|>", "<|function_call|>", "function call<|role_sep|>\n")
_GIGACHAT_CALL = re.compile(r"(?:function call<\|role_sep\|>\n|<\|function_call\|>)(.*)", re.S)
_GIGACHAT_CONTENT = re.compile(r"^(.*?)(?:<\|message_sep\|>|<\|function_call\|>)", re.S)


def extract_gigachat3(text: str, ctx: ParseContext) -> Extraction:
    """GigaChat 3: after ``function call<|role_sep|>\\n`` (or ``<|function_call|>``) the rest of
    the output (minus a final ``</s>``) is one ``{"name", "arguments": {…}}`` object. Content
    is the text before the first ``<|message_sep|>``/``<|function_call|>``.

    A non-string name fails the request in vLLM; it is kept as content here.
    """
    body = text[: text.rfind("</s>")] if text.rstrip().endswith("</s>") else text
    m = _GIGACHAT_CALL.search(body)
    if m is None:
        return as_content(text)
    try:
        obj = json.loads(m.group(1), strict=False)
    except json.JSONDecodeError:
        return as_content(text)
    if not (isinstance(obj, dict) and "name" in obj and isinstance(obj.get("arguments"), dict)):
        return as_content(text)
    if not isinstance(obj["name"], str):
        return as_content(text)
    c = _GIGACHAT_CONTENT.search(body)
    content = c.group(1) if c else body
    return Extraction(content or None, [(obj["name"], dumps_args(obj["arguments"]))])


tool_parser("gigachat3", family="gigachat3")(
    held_calls_parser(JsonFamily("gigachat3", extract_gigachat3, GIGACHAT_MARKERS))
)
