"""FunctionGemma ``<start_function_call>call:name{key:<escape>value<escape>,…}<end_function_call>``,
as vLLM 0.33 reads it (non-streaming).

A call without its end marker runs to the end of the text. Each ``key:<escape>…<escape>``
value is JSON when it parses, else the raw string. With calls, content is the stripped text
before the first start marker (null when the output starts with it). Held until ``finish()``.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, as_content

START = "<start_function_call>"
_CALL = re.compile(
    r"<start_function_call>call:(\w+)\{(.*?)\}<end_function_call>"
    r"|<start_function_call>call:(\w+)\{(.*)",
    re.S,
)
_ARG = re.compile(r"(\w+):<escape>(.*?)<escape>", re.S)


def parse_args(raw: str) -> dict:
    args: dict = {}
    for key, value in _ARG.findall(raw):
        try:
            args[key] = json.loads(value)
        except json.JSONDecodeError:
            args[key] = value
    return args


def extract_functiongemma(text: str, ctx: ParseContext) -> Extraction:
    if START not in text:
        return as_content(text)
    calls = [
        (closed_name or open_name, dumps_args(parse_args(closed_args or open_args)))
        for closed_name, closed_args, open_name, open_args in _CALL.findall(text)
    ]
    if not calls:
        return as_content(text)
    at = text.find(START)
    return Extraction(text[:at].strip() or None if at > 0 else None, calls)


@tool_parser("functiongemma", family="functiongemma")
class FunctionGemmaToolParser(HeldCallsParser):
    """vLLM's ``functiongemma`` tool-call format."""

    family = JsonFamily("functiongemma", extract_functiongemma)
