"""Mistral ``[TOOL_CALLS]`` tool calls, as vLLM 0.33 reads them from pre-v11 tokenizers
(Mistral-7B-v0.3 SentencePiece, Nemo tekken): ``content[TOOL_CALLS] [{"name", "arguments"}, …]``.

vLLM's rules (all of them depend on the whole text, so the text is held until ``finish()``):

* the text is split on ``[TOOL_CALLS]``; the first non-blank segment after a marker, stripped,
  is the call text (repeated markers with nothing between count as one, later segments are
  ignored). With ``tool_choice="required"`` or a named function and no marker, the whole
  stripped text is the call text (guided bare array);
* its first JSON value is decoded (trailing text ignored), else the greedy ``[{…}]`` inside it;
  an object is one call, a list holds calls; entries without ``name``/``arguments`` are skipped,
  a missing or non-string name is ``""``, string arguments stay verbatim, others are
  re-serialized with ``json.dumps(ensure_ascii=False)``, missing arguments are ``{}``;
* with calls, content is the text before the first marker (null when blank); without, content
  is the call text alone — what preceded the marker is dropped;
* ids are 9 random alphanumerics (Mistral's format).

vLLM treats ``required``/named tool_choice as "auto" for this parser.
"""

from __future__ import annotations

import json
import random
import re
import string
from typing import Any, ClassVar

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.tool.json_tags import Extraction, HeldCallsParser, JsonFamily, as_content

BOT = "[TOOL_CALLS]"
_ID_ALPHABET = string.ascii_letters + string.digits
_ARRAY = re.compile(r"\[{.*}\]", re.S)
_DECODER = json.JSONDecoder()


def mistral_call_id() -> str:
    return "".join(random.choices(_ID_ALPHABET, k=9))


def _forced(tool_choice: Any) -> bool:
    return tool_choice == "required" or isinstance(tool_choice, dict)


def calls_from_value(parsed: Any) -> list[tuple[str, str]]:
    if isinstance(parsed, dict):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return []
    calls = []
    for entry in parsed:
        if not isinstance(entry, dict) or ("name" not in entry and "arguments" not in entry):
            continue
        name = entry.get("name")
        args = entry.get("arguments")
        if args is None:
            args = "{}"
        elif not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        calls.append((name if isinstance(name, str) else "", args))
    return calls


def extract_mistral(text: str, ctx: ParseContext) -> Extraction:
    if ctx.tool_choice == "none" and ctx.tools:
        return as_content(text)
    content: str | None = None
    if BOT in text:
        content, *segments = text.split(BOT)
        call_text = next((s.strip() for s in segments if s.strip()), "")
    elif _forced(ctx.tool_choice):
        call_text = text.strip()
    else:
        return as_content(text)
    try:
        parsed, _ = _DECODER.raw_decode(call_text)
    except json.JSONDecodeError:
        found = _ARRAY.findall(call_text)
        try:
            parsed = json.loads(found[0]) if found else None
        except json.JSONDecodeError:
            parsed = None
    calls = calls_from_value(parsed)
    if not calls:
        return as_content(call_text)
    return Extraction(content if content and content.strip() else None, calls)


@tool_parser("mistral", family="mistral")
class MistralToolParser(HeldCallsParser):
    """vLLM's ``mistral`` tool-call format (pre-v11 ``[TOOL_CALLS]`` + JSON array)."""

    family = JsonFamily("mistral", extract_mistral)
    supports_required_and_named: ClassVar[bool] = False

    def call_id(self, index: int) -> str | None:
        return mistral_call_id()
