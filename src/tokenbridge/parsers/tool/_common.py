"""Helpers the tool-call families share, so that no family imports another.

They replay pieces of vLLM's declarative parser engine that every engine-based family runs
the same way: the thinking switch, the lexer, the JSON call-object fallback and the scan for
an arguments object inside a JSON body.
"""

from __future__ import annotations

import json
from typing import Any

from tokenbridge.parsers.base import Delta, ParseContext, ToolParser
from tokenbridge.parsers.text import scan_markers

_JSON_WS = " \t\r\n"

# Engine parser states (plain strings keep the snapshot msgpack-able).
CONTENT, PREAMBLE, NAME, ARGS, BETWEEN = "content", "preamble", "name", "args", "between"


def thinking_enabled(ctx: ParseContext) -> bool:
    """The chat template's thinking switch: on unless ``thinking``/``enable_thinking`` say no."""
    thinking, enable = ctx.kwarg("thinking"), ctx.kwarg("enable_thinking")
    if thinking is None and enable is None:
        return True
    return bool(thinking) or bool(enable)


def lex(text: str, markers: tuple[str, ...], drops: list[str]) -> list[tuple[bool, str]]:
    """``(is_marker, text)`` pieces; at each position the longest literal wins, drops vanish."""
    lits = sorted({*markers, *drops}, key=len, reverse=True)
    firsts = {lit[0] for lit in lits}
    marker_set = set(markers)
    pieces: list[tuple[bool, str]] = []
    plain_start = i = 0
    n = len(text)
    while i < n:
        if text[i] in firsts:
            hit = next((lit for lit in lits if text.startswith(lit, i)), None)
            if hit is not None:
                if i > plain_start:
                    pieces.append((False, text[plain_start:i]))
                if hit in marker_set:
                    pieces.append((True, hit))
                i += len(hit)
                plain_start = i
                continue
        i += 1
    if plain_start < n:
        pieces.append((False, text[plain_start:]))
    return pieces


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


def json_object_end(raw: str, start: int) -> int | None:
    """End (exclusive) of the JSON object opening at ``raw[start]``; None while unclosed."""
    depth, in_str, esc = 0, False, False
    for i in range(start, len(raw)):
        ch = raw[i]
        if esc:
            esc = False
        elif in_str:
            if ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def json_member_object(raw: str, key: str) -> str | None:
    """Verbatim text of the top-level object member ``key`` (an unclosed one runs to the end);
    None without one. A member that is not an object is a ValueError."""
    depth, in_str, esc, str_start = 0, False, False, -1
    last: str | None = None
    for i, ch in enumerate(raw):
        if esc:
            esc = False
        elif in_str:
            if ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
                if depth == 1:
                    last = raw[str_start + 1 : i]
        elif ch == '"':
            in_str, str_start = True, i
        elif ch == ":" and depth == 1 and last == key:
            j = i + 1
            while j < len(raw) and raw[j] in _JSON_WS:
                j += 1
            if j >= len(raw):
                return None
            if raw[j] != "{":
                raise ValueError(f"member {key!r} must be a JSON object")
            return raw[j : json_object_end(raw, j)]
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return None


class EngineToolParser(ToolParser):
    """A family run through vLLM's declarative parser engine, read marker by marker.

    Content comes first and is held while it is all whitespace: vLLM drops such content once
    a call starts. A call collects its header in the NAME state and its body in ARGS, and is
    emitted whole when it ends. Subclasses set ``_markers`` (each marker's kind), move between
    states in ``_marker`` and emit a finished call in ``_end_call``.
    """

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._markers: dict[str, Any] = {}
        # Under "none" with tools vLLM's engine ignores calls, so whitespace content stays.
        self._drop_blank = not (ctx.tool_choice == "none" and ctx.tools)
        self._state = CONTENT
        self._pending = ""
        self._blank: str | None = ""  # content so far while it is all whitespace
        self._header = ""
        self._body = ""
        self._index = 0

    def _marker(self, marker: str, out: Delta) -> None:
        raise NotImplementedError

    def _end_call(self, out: Delta) -> None:
        raise NotImplementedError

    def _text(self, text: str, out: Delta) -> None:
        if not text:
            return
        if self._state == CONTENT:
            if self._blank is not None:
                self._blank += text
                if not self._blank.strip():
                    return
                text, self._blank = self._blank, None
            out.content += text
        elif self._state == NAME:
            self._header += text
        elif self._state == ARGS:
            self._body += text

    def _move(self, nxt: str, out: Delta) -> None:
        """Into state ``nxt``: leaving ARGS ends the call, entering NAME starts the next."""
        if self._state == ARGS:
            self._end_call(out)
        if nxt == NAME:
            if self._drop_blank and self._blank is not None:
                self._blank = ""
            self._header, self._body = "", ""
        self._state = nxt

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        self._pending = scan_markers(
            self._pending + text,
            self._markers,
            lambda piece: self._text(piece, out),
            lambda marker: self._marker(marker, out),
        )
        return out

    def finish(self) -> Delta:
        """The held-back tail as text, an open call ended, held whitespace content released."""
        out = Delta(tool_calls=[])
        text, self._pending = self._pending, ""
        self._text(text, out)
        if self._state in (NAME, ARGS):
            self._end_call(out)
            self._state = BETWEEN
        if self._blank:
            out.content += self._blank
        self._blank = ""
        return out
