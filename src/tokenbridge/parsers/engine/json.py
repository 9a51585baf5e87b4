"""JSON as vLLM's tool parsers read and write it: argument text, call objects, cut-off bodies.

Arguments are re-serialized as vLLM does (``json.dumps(..., ensure_ascii=False)``); call bodies
are scanned for their objects without parsing (a streamed body may be unfinished); a truncated
body is completed the way vLLM's partial-JSON reader completes it.
"""

from __future__ import annotations

import json
import re
from typing import Any


#: What ``json.dumps(value, ensure_ascii=False)`` builds per call (an encoder holds no state
#: between calls), made once.
_ENCODE_KEEPING_UNICODE = json.JSONEncoder(ensure_ascii=False).encode


def dumps_args(value) -> str:
    """Arguments re-serialized the way vLLM's parsers do: ``json.dumps(..., ensure_ascii=False)``."""
    return _ENCODE_KEEPING_UNICODE(value)


_JSON_WS = " \t\r\n"


def name_and_args_from_json(
    raw: str, keys: tuple[str, ...] = ("arguments", "parameters")
) -> tuple[Any, str]:
    """A call body that is a JSON call object: its ``name`` and its arguments.

    The engine's fallback when no name was read from the markup: the arguments are the first
    of ``keys`` present (verbatim when a string), else every other member.
    """
    raw = raw.strip()
    try:
        parsed = json.loads(raw)
    except ValueError:
        return "", raw
    if not isinstance(parsed, dict):
        return "", raw
    name = parsed.get("name", "")
    for key in keys:
        if key in parsed:
            val = parsed[key]
            return name, val if isinstance(val, str) else json.dumps(val, ensure_ascii=False)
    return name, json.dumps({k: v for k, v in parsed.items() if k != "name"}, ensure_ascii=False)


#: A JSON string (group 1: its text; group 2: the closing quote, missing when it runs to the end)
#: or one structural character: the tokens both whole-text scanners below read.
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)(")?|[{}\[\]:]', re.S)


def json_object_end(raw: str, start: int) -> int | None:
    """End (exclusive) of the JSON object opening at ``raw[start]``; None while unclosed."""
    depth = 0
    for m in _TOKEN.finditer(raw, start):
        t = m.group()
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return m.end()
    return None


def json_member_object(raw: str, key: str) -> str | None:
    """Verbatim text of the top-level object member ``key`` (an unclosed one runs to the end);
    None without one. A member that is not an object is a ValueError."""
    depth, last = 0, None
    for m in _TOKEN.finditer(raw):
        t = m.group()
        if t[0] == '"':
            if m.group(2) and depth == 1:
                last = m.group(1)
        elif t == ":":
            if depth == 1 and last == key:
                j = m.end()
                while j < len(raw) and raw[j] in _JSON_WS:
                    j += 1
                if j >= len(raw):
                    return None
                if raw[j] != "{":
                    raise ValueError(f"member {key!r} must be a JSON object")
                return raw[j : json_object_end(raw, j)]
        elif t in "{[":
            depth += 1
        else:
            depth -= 1
    return None


_LITERALS = ("null", "true", "false", "Infinity", "-Infinity", "NaN")


def complete_truncated_json(text: str) -> Any:
    """The value of a JSON text cut short (a length limit): open strings and containers are
    closed, a dangling number sign/point/exponent is dropped, a partial literal completed, an
    object member without a complete key or any value dropped. Malformed text raises."""
    s = text.strip()
    if not s:
        raise ValueError("empty JSON")
    out, _, _ = _complete_value(s, 0)
    return json.loads(out)


def _complete_value(s: str, i: int) -> tuple[str, bool, int]:
    """``(completed text of the value at i, whether it was complete, end index)``."""
    ch = s[i]
    if ch == '"':
        j = i + 1
        while j < len(s):
            if s[j] == "\\":
                if j + 1 >= len(s):
                    break
                j += 2
                continue
            if s[j] == '"':
                return s[i : j + 1], True, j + 1
            j += 1
        body = s[i:j]
        esc = body.rfind("\\u", max(0, len(body) - 5))
        if esc != -1 and (esc - len(body[:esc].rstrip("\\"))) % 2 == 0:
            body = body[:esc]
        return body + '"', False, len(s)
    if ch in "[{":
        return _complete_container(s, i)
    if ch in "0123456789" or (ch == "-" and s[i + 1 : i + 2] not in ("I", "")):
        j = i + 1
        while j < len(s) and s[j] in "0123456789.-+eE":
            j += 1
        num = s[i:j]
        trimmed = num.rstrip(".-+eE")
        return trimmed, j < len(s) and trimmed == num, j
    for lit in _LITERALS:
        if s.startswith(lit, i):
            return lit, True, i + len(lit)
        if lit.startswith(s[i:]):
            return lit, False, len(s)
    raise ValueError(f"unexpected character {ch!r}")


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def _complete_container(s: str, i: int) -> tuple[str, bool, int]:
    is_obj = s[i] == "{"
    close = "}" if is_obj else "]"
    parts: list[str] = []
    j = i + 1
    while True:
        j = _skip_ws(s, j)
        if j >= len(s):
            break
        if s[j] == close and not parts:
            return s[i : j + 1], True, j + 1
        key = ""
        if is_obj:
            if s[j] != '"':
                raise ValueError("object key expected")
            key, done, j = _complete_value(s, j)
            j = _skip_ws(s, j)
            if not done or j >= len(s):
                break
            if s[j] != ":":
                raise ValueError("':' expected")
            j = _skip_ws(s, j + 1)
            if j >= len(s):
                break
            key += ": "
        value, done, j = _complete_value(s, j)
        parts.append(key + value)
        j = _skip_ws(s, j)
        if not done or j >= len(s):
            break
        if s[j] == ",":
            j += 1
        elif s[j] == close:
            return s[i : j + 1], True, j + 1
        else:
            raise ValueError("',' or closing bracket expected")
    return s[i] + ", ".join(parts) + close, False, len(s)


def json_args_pieces(
    text: str, held: str, depth: int, in_str: bool, esc: bool
) -> tuple[list[str], str, int, bool, bool]:
    """Argument text as vLLM's engine emits it: a top-level closing bracket is held back until
    more text shows it is not the end (the held text can land after a later argument event, so
    the order is replayed). Returns the pieces to emit and the new ``(held, depth, in_str, esc)``."""
    pieces = []
    for ch in text:
        held += ch
        if esc:
            esc = False
        elif in_str:
            if ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            if depth > 0:
                depth -= 1
            if depth == 0:
                continue
        pieces.append(held)
        held = ""
    return pieces, held, depth, in_str, esc


def name_of(obj: Any) -> str:
    """``obj["name"]``; vLLM's ``FunctionCall`` rejects a non-string name (the caller falls back)."""
    name = obj["name"]
    if not isinstance(name, str):
        raise TypeError("tool name is not a string")
    return name


def call_from_object(obj: Any, args_keys: tuple[str, ...]) -> tuple[str, str]:
    """``(name, arguments)`` of a ``{"name": …, <args key>: …}`` object.

    Raises like vLLM does (missing key, non-object, non-string name), so callers fall back.
    """
    if not isinstance(obj, dict):
        raise TypeError("tool call is not an object")
    name = obj["name"]
    if not isinstance(name, str):
        raise TypeError("tool name is not a string")
    for key in args_keys[:-1]:
        if key in obj:
            return name, dumps_args(obj[key])
    return name, dumps_args(obj[args_keys[-1]])


def dict_or_raw_args(value: Any) -> str:
    """xLAM/Hunyuan-A13B arguments: a dict is re-serialized, a string kept verbatim, else invalid."""
    if isinstance(value, dict):
        return dumps_args(value)
    if isinstance(value, str):
        return value
    raise TypeError("arguments are neither an object nor a string")


def named_calls(data: list) -> list[tuple[str, str]]:
    """The entries with both ``name`` and ``arguments`` (others skipped); bad arguments raise."""
    return [
        (name_of(c), dict_or_raw_args(c["arguments"]))
        for c in data
        if isinstance(c, dict) and "name" in c and "arguments" in c
    ]
