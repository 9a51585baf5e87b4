"""Schema coercion of tool-call argument values, as vLLM's parser engine does it.

A value the model wrote as a string becomes the first type the tool's JSON schema allows that
it parses as; the arguments are re-serialized only when some value changed. One copy for
every family that coerces (the tag engine, Kimi K2, DeepSeek DSML, Granite, Gemma 4, …), and
the one place that finds a tool's schema in the request. Families whose vLLM parser converts
values by rules of its own keep those rules beside their format (dots, Hunyuan, MiniCPM5,
K2 Horizon: vLLM's ``dots``, ``hy_v3``/``hy_v4``, ``minicpm5`` and ``k2_horizon`` parsers each
convert differently).
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterator

_TYPE_ALIASES = {
    **dict.fromkeys(("str", "text", "varchar", "char", "enum"), "string"),
    **dict.fromkeys(
        ("int", "int32", "int64", "uint", "uint32", "uint64", "long", "short", "unsigned"),
        "integer",
    ),
    **dict.fromkeys(("float", "float32", "float64", "double"), "number"),
    "bool": "boolean",
    "dict": "object",
    **dict.fromkeys(("arr", "list", "sequence"), "array"),
}
_ENUM_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (list, "array"), (dict, "object"))


def schema_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return {"string"}
    types: set[str] = set()
    t = schema.get("type")
    if isinstance(t, str):
        types.add(t)
    elif isinstance(t, list):
        types.update(x for x in t if isinstance(x, str))
    enum = schema.get("enum")
    if isinstance(enum, list):
        for v in enum:
            if v is None:
                types.add("null")
            else:
                types.update(next(([n] for cls, n in _ENUM_TYPES if isinstance(v, cls)), []))
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for choice in schema[key]:
                types |= schema_types(choice)
    return types or {"string"}


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def coerce_string(value: str, types: set[str]) -> Any:
    """A raw string as the first schema type it parses as (null, integer, number, …)."""
    wanted = {_TYPE_ALIASES.get(t.strip().lower(), t.strip().lower()) for t in types}
    for t in ("null", "integer", "number", "boolean", "object", "array", "string"):
        if t not in wanted:
            continue
        if t == "null":
            if value.lower() == "null":
                return None
        elif t == "string":
            return value
        elif t == "integer":
            try:
                return int(value)
            except ValueError:
                pass
        elif t == "number":
            try:
                return int(value)
            except ValueError:
                pass
            try:
                f = float(value)
            except ValueError:
                continue
            if math.isfinite(f):
                return f if f != int(f) else int(f)
        elif t == "boolean":
            low = value.lower().strip()
            if low in ("true", "1"):
                return True
            if low in ("false", "0"):
                return False
        else:
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if _finite(parsed):
                return parsed
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return parsed if _finite(parsed) else value


_COERCED = frozenset(("null", "integer", "number", "boolean", "object", "array"))


def stays_string(tools: list[dict] | None, name: str, key: str) -> bool:
    """True when the tool's schema leaves a string value of ``key`` a string whatever it says,
    so a streamed string can be sent before it ends."""
    if not tools:
        return True
    prop = tool_properties(tools, name).get(key)
    return not isinstance(prop, dict) or types_stay_string(schema_types(prop))


def types_stay_string(types: set[str]) -> bool:
    """True when ``coerce_string`` returns any text unchanged for these schema types."""
    wanted = {_TYPE_ALIASES.get(t.strip().lower(), t.strip().lower()) for t in types}
    return "string" in wanted and not wanted & _COERCED


def coerce_value(value: Any, tools: list[dict] | None, name: str, key: str) -> Any:
    """One argument value as ``fix_arg_types`` leaves it in the call's arguments."""
    prop = tool_properties(tools, name).get(key) if tools and name else None
    return _coerce(value, prop)[0] if isinstance(prop, dict) else value


def _coerce(value: Any, schema: dict) -> tuple[Any, bool]:
    if isinstance(value, str):
        out = coerce_string(value, schema_types(schema))
        return out, out is not value
    if isinstance(value, dict):
        props = schema.get("properties")
        return value, isinstance(props, dict) and _coerce_object(value, props)
    if isinstance(value, list):
        items = schema.get("items")
        changed = False
        if isinstance(items, dict):
            for i, item in enumerate(value):
                out, item_changed = _coerce(item, items)
                if item_changed:
                    value[i], changed = out, True
        return value, changed
    out = coerce_string(json.dumps(value, ensure_ascii=False), schema_types(schema))
    if type(out) is not type(value) or out != value:
        return out, True
    return value, False


def _coerce_object(args: dict, properties: dict) -> bool:
    changed = False
    for key, value in args.items():
        prop = properties.get(key)
        if isinstance(prop, dict):
            out, c = _coerce(value, prop)
            if c:
                args[key], changed = out, True
    return changed


def _functions(tools: list[dict] | None) -> Iterator[dict]:
    for tool in tools or []:
        if isinstance(tool, dict) and tool.get("type", "function") == "function":
            yield tool.get("function") or {}


def function_tools(tools: list[dict] | None) -> Iterator[tuple[Any, Any]]:
    """``(name, parameters)`` of each function tool of the request, in order."""
    return ((fn.get("name"), fn.get("parameters")) for fn in _functions(tools))


def tool_function(tools: list[dict] | None, name: str) -> dict | None:
    """The ``function`` object of the request's tool called ``name``, if there is one."""
    return next((fn for fn in _functions(tools) if fn.get("name") == name), None)


def tool_properties(tools: list[dict] | None, name: str) -> dict:
    """The ``properties`` of the tool's parameter schema; ``{}`` when missing or not an object."""
    fn = tool_function(tools, name)
    props = (fn.get("parameters") or {}).get("properties", {}) if fn else {}
    return props if isinstance(props, dict) else {}


def fix_arg_types(args_json: str, name: str, tools: list[dict] | None) -> str:
    """Re-serialize the arguments when schema coercion changes a value; else keep them."""
    if not tools or not name:
        return args_json
    try:
        args = json.loads(args_json)
    except ValueError:
        return args_json
    if not isinstance(args, dict):
        return args_json
    props = tool_properties(tools, name)
    if not props or not _coerce_object(args, props):
        return args_json
    return json.dumps(args, ensure_ascii=False)
