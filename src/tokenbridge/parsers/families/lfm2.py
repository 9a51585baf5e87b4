"""LiquidAI LFM2 ``<|tool_call_start|>[fn(a=1), …]<|tool_call_end|>``: a pythonic call list
between markers, as vLLM 0.33 reads it (non-streaming).

Only the first start marker counts; without an end marker the call list runs to the end of
the text. The stripped list must be ``[…]`` and parse as a non-empty list of calls with literal
keyword arguments (:mod:`pythonic`'s rules), else the whole text is content. Content is the
stripped text before the block and the stripped text after it, joined by a newline; after the
block, anything up to a repeated end marker is the model echoing its call and is dropped.

vLLM additionally repairs some invalid Python (raw control characters and nested quotes in
strings, leading-zero integers, reserved-word keywords) before giving up; such outputs stay
content here.
"""

from __future__ import annotations

import ast
import json
import re
import warnings

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, as_content
from tokenbridge.parsers.families.pythonic import dotted_name, literal_value

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
_LIST = re.compile(r"\[.*\]$", re.S)


def call_list(source: str) -> list[tuple[str, str]] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = getattr(ast.parse(source).body[0], "value", None)
        if not isinstance(value, ast.List) or not value.elts:
            return None
        if not all(isinstance(e, ast.Call) for e in value.elts):
            return None
        return [
            (
                dotted_name(call.func),
                json.dumps({kw.arg: literal_value(kw.value) for kw in call.keywords}, ensure_ascii=False),
            )
            for call in value.elts
        ]
    except Exception:
        return None


def extract_lfm2(text: str, ctx: ParseContext) -> Extraction:
    start = text.find(START)
    if start == -1:
        return as_content(text)
    end = text.find(END, start)
    body_end = len(text) if end == -1 else end
    source = text[start + len(START) : body_end].strip()
    calls = call_list(source) if _LIST.match(source) else None
    if calls is None:
        return as_content(text)
    parts = [text[:start].strip()]
    if end != -1:
        after = text[end + len(END) :]
        echo = after.rfind(END)
        parts.append((after[echo + len(END) :] if echo != -1 else after).strip())
    return Extraction("\n".join(p for p in parts if p) or None, calls)


@tool_parser("lfm2", family="lfm2")
class Lfm2ToolParser(HeldCallsParser):
    """vLLM's ``lfm2`` tool-call format."""

    family = JsonFamily("lfm2", extract_lfm2)
