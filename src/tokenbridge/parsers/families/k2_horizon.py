"""K2 Horizon (IFM) tool calls: one ``<ifm|tool_calls>…</ifm|tool_calls>`` group of
``<ifm|tool_call>…</ifm|tool_call>`` calls, each in the request's ``tool_call_format``
(chat template kwarg): ``xml`` (default) ``name<ifm|arg_key>k</ifm|arg_key><ifm|arg_value>v
</ifm|arg_value>…``, ``xml_typed`` (an ``<ifm|arg_type>`` per argument) or ``json``
(``{"name", "arguments"}``).

vLLM 0.33 (``K2HorizonToolParser``): the first closed group decides; anything malformed in it
(stray text, unknown or blank tool name, duplicate or mistyped argument) makes the whole text
content. Values are coerced to the schema (an explicit ``arg_type`` narrows a union). Content is
the text around the group. The class is engine based, so with no call a blank answer is null.
An unsupported ``tool_call_format`` is rejected by vLLM at request time; here it leaves the text
as content.

Reasoning: the markers follow ``reasoning_effort``; without an end marker, reasoning ends at
``<ifm|tool_calls>`` or, failing that, everything is content (so the output is held to the end).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.held import Extraction, HeldBlockParser, WholeTextParser
from tokenbridge.parsers.engine.reasoning import closed_in_prompt
from tokenbridge.parsers.engine.schema import coerce_string, function_tools, schema_types

GROUP_START, GROUP_END = "<ifm|tool_calls>", "</ifm|tool_calls>"
CALL_START, CALL_END = "<ifm|tool_call>", "</ifm|tool_call>"
KEY_START, KEY_END = "<ifm|arg_key>", "</ifm|arg_key>"
TYPE_START, TYPE_END = "<ifm|arg_type>", "</ifm|arg_type>"
VALUE_START, VALUE_END = "<ifm|arg_value>", "</ifm|arg_value>"
ARG_MARKERS = (KEY_START, KEY_END, TYPE_START, TYPE_END, VALUE_START, VALUE_END)
FORMATS = frozenset({"json", "xml", "xml_typed"})

_e = re.escape
_CALL = re.compile(f"{_e(CALL_START)}(.*?){_e(CALL_END)}", re.S)
_ARG = re.compile(
    f"{_e(KEY_START)}(.*?){_e(KEY_END)}\\s*(?:{_e(TYPE_START)}(.*?){_e(TYPE_END)}\\s*)?"
    f"{_e(VALUE_START)}(.*?){_e(VALUE_END)}",
    re.S,
)


class InvalidCall(ValueError):
    pass


def _base_type(arg_type: str | None) -> str | None:
    return arg_type.split("[", 1)[0].strip().lower() if arg_type else None


def _coerce_xml(value: str, schema: Any, explicit: str | None) -> Any:
    base = _base_type(explicit)
    types = schema_types(schema)
    if isinstance(schema, dict):
        if base in types and len(types) > 1:
            types = {base}
    elif base == "any":
        return value
    elif base:
        types = {base}
    return coerce_string(value if "string" in types else value.strip(), types)


def _coerce_json(value: Any, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, allow_nan=False)
    return coerce_string(raw, schema_types(schema))


@tool_parser("k2_horizon", family="k2_horizon")
class K2HorizonToolParser(HeldBlockParser):
    """vLLM's ``k2_horizon`` tool-call format."""

    name = "k2_horizon"
    supports_required_and_named = False
    engine_based = True

    def __init__(self, ctx) -> None:
        fmt = ctx.kwarg("tool_call_format", "xml")
        self.format = fmt if isinstance(fmt, str) and fmt in FORMATS else None
        reasoning = registry.get_reasoning_parser(ctx.reasoning_parser) if ctx.reasoning_parser else None
        # vLLM's pair is engine based (blank answers become null) unless a legacy reasoning
        # parser is configured alongside.
        self.engine = reasoning is None or reasoning.engine_based
        super().__init__(ctx)

    def stream_markers(self) -> tuple[str, ...]:
        if self.format is None or self.ctx.tool_choice == "none":
            return ()
        return (GROUP_START,)

    def decision_end(self, held: str) -> int | None:
        end = held.find(GROUP_END, held.find(GROUP_START) + len(GROUP_START))
        return None if end == -1 else end + len(GROUP_END)

    def _no_calls(self, text: str) -> Extraction:
        return Extraction(None if self.engine and not text.strip() else text, [])

    def _tool_name(self, name: Any) -> str:
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise InvalidCall("invalid function name")
        if self.ctx.tools and name not in {n for n, _ in function_tools(self.ctx.tools)}:
            raise InvalidCall("unknown tool name")
        choice = self.ctx.tool_choice
        if isinstance(choice, dict):
            named = (choice.get("function") or {}).get("name", choice.get("name"))
            if name != named:
                raise InvalidCall("not the named tool")
        return name

    def _properties(self, name: str) -> dict:
        for tool_name, parameters in function_tools(self.ctx.tools):
            if tool_name == name:
                return (parameters or {}).get("properties", {})
        return {}

    def _json_call(self, body: str) -> tuple[str, dict]:
        call = json.loads(body.strip())
        if not isinstance(call, dict):
            raise InvalidCall("call is not an object")
        name = self._tool_name(call.get("name"))
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            raise InvalidCall("arguments are not an object")
        props = self._properties(name)
        return name, {k: _coerce_json(v, props.get(k)) for k, v in args.items()}

    def _xml_call(self, body: str) -> tuple[str, dict]:
        first = body.find(KEY_START)
        if first == -1:
            if any(m in body for m in ARG_MARKERS):
                raise InvalidCall("malformed argument tags")
            return self._tool_name(body.strip()), {}
        name = self._tool_name(body[:first].strip())
        props = self._properties(name)
        args: dict[str, Any] = {}
        pos = first
        for m in _ARG.finditer(body, first):
            key, explicit, value = m.group(1).strip(), m.group(2), m.group(3)
            if body[pos : m.start()].strip() or not key or key in args:
                raise InvalidCall("malformed argument")
            if explicit is not None:
                explicit = explicit.strip()
            if self.format == "xml" and explicit is not None:
                raise InvalidCall("type tag in an untyped call")
            if self.format == "xml_typed" and not explicit:
                raise InvalidCall("typed argument without a type")
            args[key] = _coerce_xml(value, props.get(key), explicit)
            pos = m.end()
        if pos == first or body[pos:].strip():
            raise InvalidCall("malformed argument tags")
        return name, args

    def extract(self, text: str, at_start: bool) -> Extraction:
        start = text.find(GROUP_START) if self.stream_markers() else -1
        if start == -1:
            return self._no_calls(text)
        body_start = start + len(GROUP_START)
        end = text.find(GROUP_END, body_start)
        if end == -1:
            return self._no_calls(text)
        group = text[body_start:end]
        bodies = _CALL.findall(group)
        if not bodies or _CALL.sub("", group).strip():
            return self._no_calls(text)
        parse = self._json_call if self.format == "json" else self._xml_call
        try:
            calls = []
            for body in bodies:
                name, args = parse(body)
                calls.append((name, json.dumps(args, ensure_ascii=False, allow_nan=False)))
        except (ValueError, TypeError, AttributeError):
            return self._no_calls(text)
        content = text[:start] + text[end + len(GROUP_END) :]
        return Extraction(content if content.strip() else None, calls)


_K2H_EFFORT = {
    "high": ("<ifm|think>", "</ifm|think>"),
    "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
    "low": ("<ifm|think_faster>", "</ifm|think_faster>"),
}


@reasoning_parser("k2_horizon", family="k2_horizon")
class K2HorizonReasoningParser(WholeTextParser):
    """K2 Horizon: markers by ``reasoning_effort``; without an end marker, reasoning ends at
    ``<ifm|tool_calls>`` or, failing that, everything is content."""

    name = "k2_horizon"

    @staticmethod
    def _markers(ctx: ParseContext) -> tuple[str, str]:
        return _K2H_EFFORT.get(ctx.kwarg("reasoning_effort", "high"), _K2H_EFFORT["high"])

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = cls._markers(ctx)
        return closed_in_prompt(prompt_token_ids, ctx.vocab, (start,), (end, GROUP_START))

    def split(self, text: str) -> tuple[str | None, str | None]:
        start, end = self._markers(self.ctx)
        text = text.removeprefix(start)
        if end in text:
            reasoning, _, content = text.partition(end)
            return reasoning, content or None
        i = text.find(GROUP_START)
        if i != -1:
            return text[:i], text[i:]
        return "", text or None
