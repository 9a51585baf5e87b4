"""Pieces of Python literals, decided one at a time for the streamed call-list reader
(``python_calls``): a string prefix's flags, a backslash escape, and a complete number or name
token as the JSON ``json.dumps`` writes for its value (and for it as a dict key)."""

from __future__ import annotations

import ast
import json
import re

_DIGITS = r"[0-9](?:_?[0-9])*"
NUMBER = re.compile(
    rf"0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"
    rf"|(?:{_DIGITS}\.(?:{_DIGITS})?|\.{_DIGITS})(?:[eE][-+]?{_DIGITS})?|{_DIGITS}[eE][-+]?{_DIGITS}"
    rf"|[1-9](?:_?[0-9])*|0(?:_?0)*"
)
#: A decimal number so far that ends in its exponent's ``e``: a sign after it is part of it.
EXP_OPEN = re.compile(rf"(?:{_DIGITS}\.?(?:{_DIGITS})?|\.{_DIGITS})[eE]")
_SIMPLE_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
                   "t": "\t", "v": "\v"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")
#: Names the one-shot path reads as JSON values: Python's constants and JSON's own spellings.
_LITERALS = {"True": "true", "False": "false", "None": "null", "true": "true", "false": "false", "null": "null"}
#: The constants among them, as dict keys (``json.dumps`` writes ``{True: 1}`` as ``{"true": 1}``).
_CONSTANT_KEYS = {"True": '"true"', "False": '"false"', "None": '"null"'}


class NotALiteral(ValueError):
    """The text is not a literal the one-shot path accepts."""


def string_prefix(token: str) -> str | None:
    """The flags of a string prefix (``r``, ``f``, ``rf`` or ``""``); None: not a ``str`` prefix."""
    low = token.lower()
    if low in ("", "u", "r", "f"):
        return low.replace("u", "")
    if low in ("rf", "fr"):
        return "rf"
    return None


def scalar_json(token: str, signs: str) -> tuple[str, str | None]:
    """A complete number or name token after unary ``signs``: its JSON, and its JSON as a dict
    key (None: it cannot be one; a signed number is an expression, not a constant)."""
    if token in _LITERALS:
        if signs:
            raise NotALiteral(token)
        return _LITERALS[token], _CONSTANT_KEYS.get(token)
    if not NUMBER.fullmatch(token):
        raise NotALiteral(token)
    try:
        number = ast.literal_eval(token)
    except (ValueError, SyntaxError):  # an int past Python's digit limit
        raise NotALiteral(token) from None
    if signs.count("-") % 2:
        number = -number
    value = json.dumps(number)
    return value, None if signs else f'"{value}"'


def decode_escape(s: str, i: int, raw: bool) -> tuple[str, int] | None:
    """The text a backslash sequence at ``i`` stands for and the index after it (None: not yet
    decidable). An unknown escape keeps its backslash, as Python does."""
    n = len(s)
    if i + 1 >= n:
        return None
    c = s[i + 1]
    if c == "\r":
        if i + 2 >= n:
            return None
        return ("\\\n" if raw else ""), i + (3 if s[i + 2] == "\n" else 2)
    if raw:
        return s[i : i + 2], i + 2
    if c == "\n":
        return "", i + 2
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], i + 2
    if c in _OCTAL:
        j = i + 1
        while j < n and j < i + 4 and s[j] in _OCTAL:
            j += 1
        if j == n and j < i + 4:
            return None
        return chr(int(s[i + 1 : j], 8)), j
    if c in _HEX_ESCAPES:
        size = _HEX_ESCAPES[c]
        digits = s[i + 2 : i + 2 + size]
        if not all(h in _HEX for h in digits):
            raise NotALiteral("bad \\x, \\u or \\U escape")
        if len(digits) < size:
            return None
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise NotALiteral("escape past U+10FFFF")
        return chr(code), i + 2 + size
    if c == "N":
        end = s.find("}", i)
        if end < 0:
            if n - i > 100:
                raise NotALiteral("\\N{...} too long")
            return None
        try:
            return ast.literal_eval('"' + s[i : end + 1] + '"'), end + 1
        except (ValueError, SyntaxError):
            raise NotALiteral("unknown \\N{...} name") from None
    return s[i : i + 2], i + 2
