"""Poolside V1 tool calls, GLM-4 style: ``<tool_call>name\\n<arg_key>k</arg_key>
<arg_value>v</arg_value>…</tool_call>``.

vLLM 0.33 (``PoolsideV1ToolParser.extract_tool_calls``): every closed call whose name (up to a
newline or ``<``) parses is a call, others are skipped. Values of string-typed parameters stay
verbatim; others are stripped and read as JSON, then as a Python literal, else kept as text.
Content is the text before the first ``<tool_call>`` (null when blank); with no call it is the
whole text.

Reasoning: the DeepSeek-V3 switch (R1 rules when ``thinking``/``enable_thinking`` is on); the
prompt check stops at the ``<assistant>`` turn.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.reasoning import IdentityReasoningParser, SwitchedReasoningParser, closed_in_prompt
from tokenbridge.parsers.engine.thinking import EITHER_FLAG_DEFAULT_OFF
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import HeldBlockParser
from tokenbridge.parsers.engine.schema import function_tools
from tokenbridge.parsers.engine.held import Extraction, as_content

START = "<tool_call>"
_CALL = re.compile(r"<tool_call>.*?</tool_call>", re.S)
_DETAIL = re.compile(r"<tool_call>\s*([^\n<]+?)\s*\n?\s*(<arg_key>.*?)?</tool_call>", re.S)
_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.S)


def _deserialize(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


@tool_parser("poolside_v1", family="poolside_v1")
class PoolsideV1ToolParser(HeldBlockParser):
    """vLLM's ``poolside_v1`` tool-call format."""

    name = "poolside_v1"
    supports_required_and_named = False

    def stream_markers(self) -> tuple[str, ...]:
        return (START,)

    def _is_string(self, function: str, key: str) -> bool:
        for name, parameters in function_tools(self.ctx.tools):
            if name == function:
                if parameters is None:
                    return False
                return parameters.get("properties", {}).get(key, {}).get("type", None) == "string"
        return False

    def extract(self, text: str, at_start: bool) -> Extraction:
        calls = []
        try:
            for block in _CALL.findall(text):
                detail = _DETAIL.search(block)
                if detail is None:
                    continue
                name, args = detail.group(1).strip(), detail.group(2)
                values = {}
                for key, value in _PAIR.findall(args) if args else []:
                    key = key.strip()
                    values[key] = value if self._is_string(name, key) else _deserialize(value.strip())
                calls.append((name, dumps_args(values)))
        except Exception:
            return as_content(text)
        if not calls:
            return as_content(text)
        content = text[: text.find(START)]
        return Extraction(content if content.strip() else None, calls)


@reasoning_parser("poolside_v1", family="deepseek_v3")
class PoolsideV1ReasoningParser(SwitchedReasoningParser):
    """Poolside V1: the DeepSeek-V3 switch; the prompt check stops at the ``<assistant>`` turn."""

    name = "poolside_v1"
    thinking = EITHER_FLAG_DEFAULT_OFF

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        if cls._pick(ctx) is IdentityReasoningParser:
            return True
        return closed_in_prompt(prompt_token_ids, ctx.vocab, ("<think>", "<assistant>"), ("</think>",))
