"""dots.llm ``<dots_function_call>`` blocks, as vLLM 0.33 reads them (non-streaming).

A block holds ``<invoke name="fn"><parameter name="p">value</parameter></invoke>`` elements
(or, as a fallback, one ``{"name", "arguments"}`` JSON object). Parameter values are typed by
the tool's schema (``$ref``/``anyOf`` resolved); only calls to tools of the request count. A
block that fails to parse is skipped. With calls, content is the stripped text before the first
marker; without, the whole text. Held until ``finish()`` (the strip depends on what follows).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, as_content
from tokenbridge.parsers.engine.schema import tool_function

START, END = "<dots_function_call>", "</dots_function_call>"
_BLOCK = re.compile(rf"{START}\s*(.*?)\s*{END}", re.S)
_INVOKE = re.compile(r"<invoke\s+name\s*=\s*(?P<name>[^>]+)>(?P<body>.*?)</invoke>", re.S)
_PARAMETER = re.compile(r"<parameter\s+name\s*=\s*(?P<name>[^>]+)>(?P<value>.*?)</parameter>", re.S)


def unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def schema_type(schema: Any, defs: dict, depth: int = 0) -> Any:
    """The declared ``type`` of a property schema, through ``$ref`` and non-null alternatives."""
    if not isinstance(schema, dict) or depth > 10:
        return None
    if "type" in schema:
        return schema["type"]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return schema_type(defs.get(ref.rsplit("/", 1)[-1]), defs, depth + 1)
    for keyword in ("anyOf", "oneOf", "allOf"):
        options = schema.get(keyword)
        if not isinstance(options, list):
            continue
        for option in options:
            if isinstance(option, dict) and option.get("type") == "null":
                continue
            found = schema_type(option, defs, depth + 1)
            if found is not None:
                return found
    return None


def convert(value: str, declared: Any) -> Any:
    """A parameter's text as the declared type (``null`` is null whatever the type)."""
    if value.lower() == "null":
        return None
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "string")
    kind = str(declared).lower()
    if kind in ("string", "str", "text"):
        return value
    if kind in ("integer", "int"):
        try:
            return int(value)
        except ValueError:
            return value
    if kind in ("number", "float"):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    if kind in ("boolean", "bool"):
        return value.lower() in ("true", "1")
    try:
        return json.loads(value)
    except ValueError:
        return value


def tool_schema(tools: list[dict] | None, name: str) -> tuple[dict, dict]:
    """``(properties, $defs)`` of the first tool called ``name``."""
    fn = tool_function(tools, name)
    params = fn.get("parameters") if fn else None
    if not isinstance(params, dict):
        return {}, {}
    props, defs = params.get("properties", {}), params.get("$defs", {})
    return (props if isinstance(props, dict) else {}), (defs if isinstance(defs, dict) else {})


def block_calls(body: str, tools: list[dict] | None) -> list[dict]:
    body = body.strip()
    if body.startswith("<invoke"):
        calls = []
        for m in _INVOKE.finditer(body):
            name = unquote(m.group("name"))
            props, defs = tool_schema(tools, name)
            args = {}
            for p in _PARAMETER.finditer(m.group("body")):
                key = unquote(p.group("name"))
                declared = schema_type(props[key], defs) or "string" if key in props else "string"
                args[key] = convert(p.group("value").strip(), declared)
            calls.append({"name": name, "arguments": args})
        return calls
    parsed = json.loads(body)
    if not isinstance(parsed, dict):
        raise TypeError("a JSON tool call must be an object")
    return [parsed]


def extract_dots(text: str, ctx: ParseContext) -> Extraction:
    marker = text.find(START)
    if marker == -1:
        return as_content(text)
    known = ctx.tool_names()
    calls: list[tuple[str, str]] = []
    for block in _BLOCK.finditer(text):
        try:
            entries = block_calls(block.group(1), ctx.tools)
        except (TypeError, ValueError):
            continue
        for entry in entries:
            name = entry.get("name")
            if not isinstance(name, str) or name not in known:
                continue
            args = entry.get("arguments", entry.get("parameters", {})) or {}
            if isinstance(args, dict):
                calls.append((name, dumps_args(args)))
    if not calls:
        return as_content(text)
    return Extraction(text[:marker].strip() or None, calls)


@tool_parser("dots", family="dots")
class DotsToolParser(HeldCallsParser):
    """vLLM's ``dots`` tool-call format."""

    family = JsonFamily("dots", extract_dots)
    supports_required_and_named: ClassVar[bool] = False
