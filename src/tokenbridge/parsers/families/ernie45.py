"""ERNIE 4.5: ``<tool_call>{…}</tool_call>`` JSON tool calls, and R1-style reasoning whose
content is narrowed to ``<response>…</response>`` (decided on the whole output).
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, WholeTextParser, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import dumps_args, name_of
from tokenbridge.parsers.engine.reasoning import closed_in_prompt
from tokenbridge.parsers.registry import reasoning_parser, tool_parser


ERNIE_START = "<tool_call>"
_ERNIE_CALL = re.compile(r"<tool_call>\s*(?P<json>\{.*?\})\s*</tool_call>", re.S)


def extract_ernie45(text: str, ctx: ParseContext) -> Extraction:
    """ERNIE 4.5 ``<tool_call>{…}</tool_call>``: every closed ``{…}`` call must parse (a missing
    name is ``""``, missing arguments ``{}``), else all is content. Once a start marker
    exists, content is the text before it minus trailing newlines — even with no closed call."""
    if ERNIE_START not in text:
        return as_content(text)
    try:
        calls = []
        for body in _ERNIE_CALL.findall(text):
            obj = json.loads(body)
            calls.append((name_of(obj) if "name" in obj else "", dumps_args(obj.get("arguments", {}))))
    except Exception:
        return as_content(text)
    return Extraction(text[: text.find(ERNIE_START)].rstrip("\n") or None, calls)


tool_parser("ernie45", family="ernie45")(
    held_calls_parser(JsonFamily("ernie45", extract_ernie45, ERNIE_START, hold_trailing="\n"))
)


@reasoning_parser("ernie45", family="ernie45")
class Ernie45ReasoningParser(WholeTextParser):
    """Ernie-4.5: R1 rules, then the content is narrowed to ``<response>…</response>``."""

    name = "ernie45"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return closed_in_prompt(prompt_token_ids, ctx.vocab, ("<think>",), ("</think>",))

    def split(self, text: str) -> tuple[str | None, str | None]:
        before, found, after = text.partition("<think>")
        text = after if found else before
        if "</think>" not in text:
            return text, None
        reasoning, _, content = text.partition("</think>")
        i, j = content.find("<response>"), content.rfind("</response>")
        if i != -1 and j != -1 and i < j:
            content = content[i + len("<response>") : j]
        return reasoning, content or None
