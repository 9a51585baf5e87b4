"""A checkpoint's ``response_template`` (``tokenizer_config.json``) as data: its fields, delimiters,
body formats and transforms, compiled once per spec. The ``hf``/``beam`` parsers scan with it.

A template names the message's fields (``thinking``, ``content``, ``tool_calls``), each with an
opener and a closer (a literal, a list of literals or a regex), a body format (``text``, ``json``,
``xml-inline``, ``kv-lines``) and an optional ``transform`` that shapes the parsed body into
``{"type": "function", "function": {"name", "arguments"}}``.
"""

from __future__ import annotations

import copy
import json
import re as _std_re
from typing import Any

import regex as re

_SENTINEL_OPEN, _SENTINEL_CLOSE = "\x01", "\x02"


THINKING, CONTENT, TOOLS = "thinking", "content", "tool_calls"


SERVABLE_FIELDS = frozenset({THINKING, CONTENT, TOOLS})


_FIELD_KEYS = frozenset({
    "open", "open_pattern", "close", "close_pattern", "content", "content_args", "repeats",
    "join", "optional", "transform", "transform_each",
})


_TEMPLATE_KEYS = frozenset({"version", "defaults", "fields", "start_anchor", "start_anchor_pattern"})


_PLACEHOLDER = _std_re.compile(r"\{(\w+(?:\.\w+)*)\}")


#: What a checkpoint without a response template parses as: everything is content.
PASSTHROUGH = {"start_anchor_pattern": r"(?!)", "fields": {CONTENT: {"content": "text"}}}


class TemplateError(ValueError):
    """The response template is missing or cannot be served."""


class Delimiter:
    """One opener or closer: a compiled pattern, its literals (None for a regex), and whether
    a complete literal match could still grow (one literal is a prefix of another)."""

    __slots__ = ("pattern", "literals", "can_grow")

    def __init__(self, scope: str, spec: dict, literal_key: str, pattern_key: str) -> None:
        if literal_key in spec and pattern_key in spec:
            raise TemplateError(f"{scope}: both {literal_key!r} and {pattern_key!r}")
        self.pattern = None
        self.literals: list[str] | None = None
        self.can_grow = False
        if literal_key in spec:
            raw = spec[literal_key]
            lits = [raw] if isinstance(raw, str) else raw
            if not isinstance(lits, list) or not lits or not all(isinstance(s, str) and s for s in lits):
                raise TemplateError(f"{scope}: {literal_key!r} must be non-empty strings")
            lits = list(dict.fromkeys(lits))
            self.literals = lits
            self.can_grow = any(a != b and a.startswith(b) for a in lits for b in lits)
            longest_first = sorted(lits, key=len, reverse=True)
            self.pattern = re.compile("|".join(re.escape(s) for s in longest_first), re.DOTALL)
        elif pattern_key in spec:
            try:
                self.pattern = re.compile(spec[pattern_key], re.DOTALL)
            except re.error as e:
                raise TemplateError(f"{scope}: invalid {pattern_key}: {e}") from e

    def __bool__(self) -> bool:
        return self.pattern is not None


class Field:
    __slots__ = ("name", "opener", "closer", "content", "args", "transform", "each", "keeps_body")

    def __init__(self, name: str, spec: dict) -> None:
        scope = f"field {name!r}"
        if not isinstance(spec, dict) or set(spec) - _FIELD_KEYS:
            raise TemplateError(f"{scope}: unknown keys")
        self.name = name
        self.opener = Delimiter(scope, spec, "open", "open_pattern")
        self.closer = Delimiter(scope, spec, "close", "close_pattern")
        self.content = spec.get("content", "text")
        if self.content not in BODY_PARSERS:
            raise TemplateError(f"{scope}: unknown content parser {self.content!r}")
        self.args = spec.get("content_args", {})
        self.transform = spec.get("transform")
        self.each = bool(spec.get("transform_each", False))
        if spec.get("join") is not None and not spec.get("repeats", False):
            raise TemplateError(f"{scope}: 'join' requires 'repeats'")
        if name in (THINKING, CONTENT) and (
            self.content != "text" or self.transform is not None or spec.get("join") is not None
        ):
            raise TemplateError(f"{scope}: cannot be streamed")
        # Only a region whose value is used (a tool region) needs its text kept until it closes.
        self.keeps_body = name == TOOLS

    def value(self, body: str, captures: dict) -> Any:
        """The region's parsed value; raises ValueError/KeyError/TypeError when malformed."""
        value = BODY_PARSERS[self.content](body, self.args)
        if self.transform is None:
            return value
        if self.each:
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise ValueError("transform_each needs a list of objects")
            return [_fill(self.transform, {**captures, **item}) for item in value]
        return _fill(self.transform, {**captures, "content": value})


class Template:
    """A loaded response template in its streaming form (every field optional, and a
    ``content`` sink added when every field has an opener)."""

    def __init__(self, spec: Any) -> None:
        if not isinstance(spec, dict):
            raise TemplateError("the tokenizer config has no response_template")
        if spec.get("version", 1) != 1 or set(spec) - _TEMPLATE_KEYS:
            raise TemplateError("unsupported response_template")
        fields = spec.get("fields")
        if not isinstance(fields, dict) or not fields or not isinstance(spec.get("defaults", {}), dict):
            raise TemplateError("response_template needs non-empty fields")
        if set(fields) - SERVABLE_FIELDS or set(spec.get("defaults", {})) - {"role"}:
            raise TemplateError("response_template has fields serving cannot route")
        fields = copy.deepcopy(fields)
        if CONTENT not in fields and all(
            isinstance(f, dict) and ("open" in f or "open_pattern" in f) for f in fields.values()
        ):
            fields[CONTENT] = {}
        self.fields = {name: Field(name, f) for name, f in fields.items()}
        implicit = [f.name for f in self.fields.values() if not f.opener]
        if len(implicit) > 1:
            raise TemplateError("at most one field may have no opener")
        self.implicit = implicit[0] if implicit else None
        self.anchor = Delimiter("response_template", spec, "start_anchor", "start_anchor_pattern")
        if not self.anchor:
            raise TemplateError("response_template needs a start_anchor")

    def message_text(self, prompt: str) -> str:
        """The prompt from the last start anchor on (the whole prompt when there is none)."""
        last = None
        for m in self.anchor.pattern.finditer(prompt):
            last = m.end()
        return prompt if last is None else prompt[last:]

    def anchor_literals(self) -> list[str]:
        if self.anchor.literals:
            return self.anchor.literals
        literal = _plain_literal(self.anchor.pattern.pattern)
        return [literal] if literal else []


def _plain_literal(pattern: str) -> str | None:
    """The string a regex matches when it is only (escaped) literal characters."""
    out, i = [], 0
    escapes = {"n": "\n", "r": "\r", "t": "\t"}
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isalnum() and nxt not in escapes:
                return None
            out.append(escapes.get(nxt, nxt))
            i += 2
        elif c in ".^$*+?{}[]|()":
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out) or None


def _fill(shape: Any, scope: dict) -> Any:
    """A transform with each whole-string ``{name.key}`` placeholder replaced from ``scope``."""
    if isinstance(shape, dict):
        return {k: _fill(v, scope) for k, v in shape.items()}
    if isinstance(shape, list):
        return [_fill(v, scope) for v in shape]
    if not isinstance(shape, str):
        return shape
    m = _PLACEHOLDER.fullmatch(shape)
    if m is None:
        return shape
    root, *keys = m.group(1).split(".")
    if root not in scope:
        raise KeyError(root)
    value = scope[root]
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"transform key {key!r} missing")
        value = value[key]
    return value


def _text(body: str, args: dict) -> str:
    return body.strip() if args.get("strip", True) else body


def _json_body(body: str, args: dict) -> Any:
    """JSON with the template's dialect options: custom string delimiters, bare keys, and a
    text fallback (``allow_non_json``)."""
    delims = args.get("string_delims", [])
    if delims and (_SENTINEL_OPEN in body or _SENTINEL_CLOSE in body):
        raise ValueError("reserved characters in a JSON body")
    work, strings = body, []

    def stash(m: Any) -> str:
        strings.append(m.group(1))
        return f"{_SENTINEL_OPEN}{len(strings) - 1}{_SENTINEL_CLOSE}"

    for open_d, close_d in delims:
        work = re.sub(re.escape(open_d) + r"(.*?)" + re.escape(close_d), stash, work, flags=re.DOTALL)
    if args.get("unquoted_keys", False):
        work = re.sub(r"(?<=[{,])(\w+):", r'"\1":', work)
    for n, s in enumerate(strings):
        work = work.replace(f"{_SENTINEL_OPEN}{n}{_SENTINEL_CLOSE}", json.dumps(s))
    try:
        return json.loads(work)
    except json.JSONDecodeError as e:
        if args.get("allow_non_json"):
            return _text(body, args)
        raise ValueError("region is not JSON") from e


def _sub_value(raw: str, parser: dict | None) -> Any:
    if parser is None:
        return raw
    return BODY_PARSERS[parser.get("name", "text")](raw, parser.get("args", {}))


def _xml_inline(body: str, args: dict) -> dict:
    tag = args.get("tag_pattern")
    if tag is None:
        raise ValueError("xml-inline needs tag_pattern")
    merge = args.get("merge_duplicates", False)
    out: dict[str, Any] = {}
    for m in re.finditer(tag, body, flags=re.DOTALL):
        groups = m.groupdict()
        key = groups.get("key")
        if key is None:
            raise ValueError("xml-inline tag_pattern needs a 'key' group")
        value = _sub_value(groups.get("value", ""), args.get("value_parser"))
        if key in out and merge:
            if not isinstance(out[key], list):
                out[key] = [out[key]]
            out[key].append(value)
        else:
            out[key] = value
    return out


def _kv_lines(body: str, args: dict) -> dict:
    sep = args.get("kv_sep", ":")
    out: dict[str, Any] = {}
    for line in body.split(args.get("line_sep", "\n")):
        line = _text(line, args)
        if line and sep in line:
            k, v = line.split(sep, 1)
            out[_text(k, args)] = _sub_value(_text(v, args), args.get("value_parser"))
    return out


BODY_PARSERS = {
    "text": _text,
    "int": lambda b, a: int(_text(b, a)),
    "float": lambda b, a: float(_text(b, a)),
    "bool": lambda b, a: _text(b, a).lower() in ("true", "1"),
    "json": _json_body,
    "xml-inline": _xml_inline,
    "kv-lines": _kv_lines,
}


def _schema_types(schema: Any) -> tuple[str, ...]:
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else []
    if isinstance(declared, list):
        types.extend(t for t in declared if isinstance(t, str))
    for union in ("anyOf", "oneOf"):
        for choice in schema.get(union) or []:
            types.extend(_schema_types(choice))
    if schema.get("nullable") and "null" not in types:
        types.append("null")
    return tuple(types)


def _cast(raw: str, types: tuple[str, ...]) -> Any:
    """A string argument cast to the first schema type it fits (kept as text otherwise)."""
    for t in types:
        try:
            if t == "integer":
                try:
                    return int(raw)
                except ValueError:
                    number = float(raw)
                    if number.is_integer():
                        return int(number)
                    continue
            if t == "number":
                number = float(raw)
                if number != number or number in (float("inf"), float("-inf")):
                    continue
                return int(number) if number.is_integer() and "." not in raw else number
            if t == "boolean" and raw.strip().lower() in ("true", "1", "false", "0"):
                return raw.strip().lower() in ("true", "1")
            if t == "null" and raw.strip() in ("null", "None"):
                return None
            if t in ("object", "array"):
                decoded = json.loads(raw)
                if isinstance(decoded, dict if t == "object" else list):
                    return decoded
        except ValueError:
            continue
    return raw


def properties_by_tool(tools: list | None) -> dict[str, dict]:
    """Tool name -> its parameters' ``properties``, for casting parsed arguments."""
    out: dict[str, dict] = {}
    for tool in tools or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            props = params.get("properties") if isinstance(params, dict) else None
            out[fn["name"]] = props if isinstance(props, dict) else {}
    return out


def cast_arguments(value: Any, props: dict[str, dict]) -> Any:
    if isinstance(value, list):
        return [cast_arguments(v, props) for v in value]
    fn = value.get("function") if isinstance(value, dict) else None
    if not isinstance(fn, dict):
        return value
    name, args = fn.get("name"), fn.get("arguments")
    if not isinstance(name, str) or not isinstance(args, dict):
        return value
    schema = props.get(name)
    if schema:
        for key, arg in args.items():
            types = _schema_types(schema[key]) if key in schema else ()
            if not types:
                continue
            if isinstance(arg, str):
                args[key] = _cast(arg, types)
            elif isinstance(arg, list) and "array" not in types:
                args[key] = [_cast(a, types) if isinstance(a, str) else a for a in arg]
    return value


def calls_of(value: Any) -> list[tuple[str, str]]:
    """``(name, arguments)`` of each call in a tool region's value; nothing when any call
    lacks a name or arguments."""
    calls = []
    for item in value if isinstance(value, list) else [value]:
        fn = item.get("function") if isinstance(item, dict) else None
        if not isinstance(fn, dict):
            return []
        name, args = fn.get("name"), fn.get("arguments")
        if not isinstance(name, str) or not name or args is None:
            return []
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        calls.append((name, args or "{}"))
    return calls


# A model's response_template is one object for the life of the server; compiling it per
# request would redo its regexes every time.
_COMPILED: dict[int, tuple[Any, Template]] = {}


def compiled_template(spec: Any) -> Template:
    """``Template(spec)``, compiled once per spec object."""
    hit = _COMPILED.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    template = Template(spec)
    if len(_COMPILED) < 64:
        _COMPILED[id(spec)] = (spec, template)
    return template
