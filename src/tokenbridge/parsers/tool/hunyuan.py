"""Hunyuan V3 / V4 tool calls: ``<tool_calls><tool_call>name[<tool_sep>]<arg_key>k</arg_key>
<arg_value>v</arg_value>…</tool_call>…</tool_calls>``, every tag optionally carrying the
checkpoint's suffix (``<tool_call:6124c78e>``).

vLLM 0.33:

* ``hy_v3`` (``HYV3ToolParser``): once ``<tool_calls>`` appears, tools count as called even if
  none parse; calls are every ``<tool_call>name<tool_sep>args</tool_call>`` anywhere in the text
  plus one unclosed call after the last ``</tool_call>``; any error drops all calls. Content is
  the text before ``<tool_calls>``. The suffix is the tokenizer config's ``token_suffix``.
* ``hy_v4`` (``HYV4ToolParser``, strict): the first ``<tool_calls>…</tool_calls>`` block must be
  well formed (balanced tags, a name per call, nothing but argument pairs); otherwise the whole
  text is content. The suffix is read from the vocabulary's structural tokens.

Values are typed by the tool schema: boolean, integer, number (float when it has ``.``/``e``),
then JSON for other types, the raw string for strings, else a JSON/Python literal.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.held import HeldBlockParser, function_tools
from tokenbridge.parsers.engine.held import Extraction, as_content

_TYPE_ALIASES = {
    **dict.fromkeys(("str", "text", "varchar", "char", "enum"), "string"),
    **dict.fromkeys(("bool", "binary"), "boolean"),
    "int": "integer",
    **dict.fromkeys(("float", "double"), "number"),
    "list": "array",
    **dict.fromkeys(("dict", "map"), "object"),
}
_INTEGER_PREFIXES = ("int", "uint", "long", "short", "unsigned")
_NUMBER_PREFIXES = ("num", "float")


def _normalize_type(raw: Any) -> Any:
    exact = _TYPE_ALIASES.get(raw)
    if exact is not None:
        return exact
    low = raw.lower()
    if low.startswith(_INTEGER_PREFIXES):
        return "integer"
    if low.startswith(_NUMBER_PREFIXES):
        return "number"
    return raw


def _arg_schema(tools: list[tuple[Any, Any]], function: str, key: str) -> Any:
    for name, parameters in tools:
        if name == function:
            return {} if parameters is None else parameters.get("properties", {}).get(key, {})
    return {}


def _types(schema: Any) -> set:
    """The schema's non-null types: ``type`` (a list is a union) wins over ``anyOf``/``oneOf``."""
    if "type" in schema:
        t = schema["type"]
        options = [{"type": x} for x in t] if isinstance(t, list) else [schema]
    elif "anyOf" in schema:
        options = schema["anyOf"]
    elif "oneOf" in schema:
        options = schema["oneOf"]
    else:
        options = [{"type": "string"}]
    return {_normalize_type(o.get("type", "string")) for o in options} - {"null"}


def _literal(value: str) -> Any:
    try:
        return json.loads(value)
    except Exception:
        pass
    try:
        return ast.literal_eval(value)
    except Exception:
        return value


def parse_value(value: str, function: str, key: str, tools: list[tuple[Any, Any]]) -> Any:
    types = _types(_arg_schema(tools, function, key))
    if "boolean" in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if "integer" in types:
        try:
            return int(value)
        except (ValueError, TypeError):
            pass
    if "number" in types:
        try:
            return float(value) if ("." in value or "e" in value or "E" in value) else int(value)
        except (ValueError, TypeError):
            pass
    if types - {"string", "boolean", "integer", "number"}:
        try:
            return json.loads(value)
        except ValueError:
            pass
    if "string" in types:
        return value
    return _literal(value)


class _HunyuanTags:
    """The suffixed tag set of one checkpoint."""

    def __init__(self, suffix: str) -> None:
        self.calls_start, self.calls_end = f"<tool_calls{suffix}>", f"</tool_calls{suffix}>"
        self.call_start, self.call_end = f"<tool_call{suffix}>", f"</tool_call{suffix}>"
        self.sep = f"<tool_sep{suffix}>"
        self.key_start, self.key_end = f"<arg_key{suffix}>", f"</arg_key{suffix}>"
        self.value_start, self.value_end = f"<arg_value{suffix}>", f"</arg_value{suffix}>"

    def argument_pattern(self, gap: str) -> re.Pattern[str]:
        """One argument's key and value, with ``gap`` (a pattern) allowed between the two."""
        e = re.escape
        return re.compile(
            f"{e(self.key_start)}(.*?){e(self.key_end)}{gap}{e(self.value_start)}(.*?){e(self.value_end)}", re.S
        )


def _dumps(args: dict) -> str:
    return json.dumps(args, ensure_ascii=False)


@tool_parser("hy_v3", "hunyuan", family="hy_v3")
class HYV3ToolParser(HeldBlockParser):
    """vLLM's ``hy_v3`` tool-call format (SGLang's current ``hunyuan`` detector reads the same)."""

    name = "hy_v3"

    def __init__(self, ctx) -> None:
        config = getattr(ctx.vocab, "config", None)
        suffix = (config.get("token_suffix") if isinstance(config, dict) else None) or ""
        t = self.tags = _HunyuanTags(suffix)
        e = re.escape
        self._call = re.compile(f"{e(t.call_start)}(.*?){e(t.sep)}(.*?){e(t.call_end)}", re.S)
        self._open_call = re.compile(f"{e(t.call_start)}(.*?){e(t.sep)}(.*)", re.S)
        self._pair = t.argument_pattern(r"\s*")
        super().__init__(ctx)

    def stream_markers(self) -> tuple[str, ...]:
        # A call before <tool_calls> still counts, so the text is held from either marker.
        return (self.tags.calls_start, self.tags.call_start)

    def _calls(self, text: str) -> list[tuple[str, str]]:
        found = self._call.findall(text)
        if found:
            found += self._open_call.findall(text.split(self.tags.call_end)[-1])
        else:
            found = self._open_call.findall(text)
        tools = list(function_tools(self.ctx))
        calls = []
        for name, args in found:
            name = name.strip()
            values = {k: parse_value(v, name, k, tools) for k, v in self._pair.findall(args.strip())}
            calls.append((name, _dumps(values)))
        return calls

    def extract(self, text: str, at_start: bool) -> Extraction:
        start = text.find(self.tags.calls_start)
        if start == -1:
            return as_content(text)
        try:
            calls = self._calls(text)
        except Exception:
            calls = []
        return Extraction(text[:start] or None, calls)


@tool_parser("hy_v4", family="hy_v4")
class HYV4ToolParser(HeldBlockParser):
    """vLLM's ``hy_v4`` tool-call format (strict: malformed blocks stay content)."""

    name = "hy_v4"
    supports_required_and_named = False

    def __init__(self, ctx) -> None:
        from tokenbridge.parsers.reasoning.think import hy_v4_token_suffix

        t = self.tags = _HunyuanTags(hy_v4_token_suffix(ctx.vocab))
        e = re.escape
        self._call = re.compile(f"{e(t.call_start)}(.*?){e(t.call_end)}", re.S)
        self._pair = t.argument_pattern("")
        super().__init__(ctx)

    def stream_markers(self) -> tuple[str, ...]:
        # A stray end marker before the start makes the block malformed: hold from either.
        return (self.tags.calls_start, self.tags.calls_end)

    def _calls(self, text: str, start: int) -> list[tuple[str, str]]:
        t = self.tags
        end = text.find(t.calls_end)
        if end < start:
            raise ValueError("tool block not closed")
        block = text[start + len(t.calls_start) : end]
        bodies = self._call.findall(block)
        if not block.count(t.call_start) == block.count(t.call_end) == len(bodies):
            raise ValueError("malformed tool_call tags")
        tools = list(function_tools(self.ctx))
        calls = []
        for body in bodies:
            cut = body.find(t.key_start)
            name, args = (body.strip(), "") if cut == -1 else (body[:cut].strip(), body[cut:].strip())
            if not name:
                raise ValueError("tool call without a name")
            if args.count(t.key_start) != args.count(t.key_end) or args.count(
                t.value_start
            ) != args.count(t.value_end):
                raise ValueError("malformed argument tags")
            if self._pair.sub("", args).strip():
                raise ValueError("text between arguments")
            values = {k: parse_value(v, name, k, tools) for k, v in self._pair.findall(args)}
            calls.append((name, _dumps(values)))
        if not calls:
            raise ValueError("no tool calls")
        return calls

    def extract(self, text: str, at_start: bool) -> Extraction:
        start = text.find(self.tags.calls_start)
        if start == -1:
            return as_content(text)
        try:
            calls = self._calls(text, start)
        except Exception:
            return as_content(text)
        return Extraction(text[:start] or None, calls)
