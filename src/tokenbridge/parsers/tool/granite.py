"""Granite 3.x: ``<|tool_call|>`` (3.0, a special token) or ``<tool_call>`` (3.1, plain text)
followed by a JSON array of ``{"name", "arguments"}`` objects; no end marker, the ``]`` ends it.

vLLM 0.33 parses this with its declarative engine in JSON-array mode; this module replays the
engine's one-shot pass over the whole text (held until ``finish()`` like every family of
:mod:`json_tags`, since leading whitespace and trailing text depend on later calls):

* a lexer matches the markers and the tokenizer's other special tokens (which vanish);
* after a marker, whitespace is skipped; anything but ``[`` abandons the call region (the
  marker and skipped whitespace are lost, the rest is content); inside the array, whitespace
  and ``,`` separate elements, ``]`` closes it, a ``{…}`` element is one call, anything else
  abandons the region;
* the name is the first ``"name": "…"`` in the element, the arguments the verbatim text of its
  top-level ``"arguments"`` object, re-serialized only when the tool schema coerces a value;
* with calls, content is the text before the first element, ``strip()``-ed; text after it is
  dropped. ``tool_choice="none"`` keeps every text outside the call regions instead.
"""

from __future__ import annotations

import re
from typing import ClassVar

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.lexer import special_token_texts
from tokenbridge.parsers.engine.json import json_member_object, name_and_args_from_json
from tokenbridge.parsers.engine.lexer import lex
from tokenbridge.parsers.engine.schema import fix_arg_types
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily

MARKERS = ("<|tool_call|>", "<tool_call>")
_JSON_WS = " \t\r\n"
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')


class _Element:
    """Character-level twin of vLLM's argument scanner: depth counts ``{``/``[`` alike."""

    __slots__ = ("body", "depth", "in_str", "esc")

    def __init__(self) -> None:
        self.body = ""
        self.depth = 0
        self.in_str = False
        self.esc = False

    def push(self, ch: str) -> bool:
        """Append ``ch``; True when it closed the element object."""
        self.body += ch
        if self.esc:
            self.esc = False
        elif self.in_str:
            if ch == "\\":
                self.esc = True
            elif ch == '"':
                self.in_str = False
        elif ch == '"':
            self.in_str = True
        elif ch in "{[":
            self.depth += 1
        elif ch in "}]":
            if self.depth > 0:
                self.depth -= 1
            return ch == "}" and self.depth == 0
        return False


def scan(text: str, drops: list[str]) -> tuple[list[str], list[str], list[str], bool]:
    """One engine pass: (content before the first element, content after it, element bodies,
    whether any element started)."""
    before: list[str] = []
    after: list[str] = []
    bodies: list[str] = []
    state = "content"  # content | array_open | array | element
    elem: _Element | None = None
    started = False

    def emit(s: str) -> None:
        (after if started else before).append(s)

    for is_marker, piece in lex(text, MARKERS, drops):
        if state == "content" and is_marker:
            state = "array_open"
            continue
        for k, ch in enumerate(piece):
            if state == "content":
                emit(piece[k:])
                break
            if state == "element":
                if elem.push(ch):
                    bodies.append(elem.body)
                    elem = None
                    state = "array"
                continue
            if ch in _JSON_WS:
                continue
            if state == "array_open":
                if ch == "[":
                    state = "array"
                    continue
                state = "content"
                emit(piece[k:])
                break
            if ch == ",":
                continue
            if ch == "{":
                started = True
                elem = _Element()
                elem.push(ch)
                state = "element"
                continue
            if ch == "]":
                state = "content"
                emit(piece[k + 1 :])
                break
            state = "content"
            emit(piece[k:])
            break
    if elem is not None:
        bodies.append(elem.body)
    return before, after, bodies, started


def element_call(body: str, tools: list[dict] | None) -> tuple[tuple[str, str] | None, bool]:
    """``(call or None, name found while streaming)`` for one element body."""
    m = _NAME.search(body)
    streamed_name = m.group(1) if m and m.group(1) else ""
    name = streamed_name.strip()
    if not name:
        if not body.strip():
            return None, False
        fallback_name, args = name_and_args_from_json(body)
        if not fallback_name:
            return None, False
        if not isinstance(fallback_name, str):
            return None, False
        name = fallback_name
    elif body.strip():
        try:
            span = json_member_object(body, "arguments")
            args = "{}" if span is None else span
        except ValueError:
            args = name_and_args_from_json(body)[1] if body.strip() else "{}"
    else:
        args = "{}"
    return (name, fix_arg_types(args, name, tools)), bool(streamed_name)


def extract_granite(text: str, ctx: ParseContext) -> Extraction:
    drops = special_token_texts(ctx.vocab, MARKERS)
    before, after, bodies, started = scan(text, drops)
    suppress = ctx.tool_choice == "none" and bool(ctx.tools)
    if suppress:
        return Extraction("".join(before) + "".join(after) or None, [])
    calls: list[tuple[str, str]] = []
    any_streamed = False
    for body in bodies:
        call, streamed = element_call(body, ctx.tools)
        any_streamed = any_streamed or streamed
        if call is not None:
            calls.append(call)
    content = "".join(before)
    if not any_streamed:
        content += "".join(after)
    if started and not content.strip():
        content = ""
    if calls:
        content = content.strip()
    if ctx.tool_choice == "none":
        return Extraction(content or None, [])
    return Extraction(content or None, calls)


class GraniteToolParser(HeldCallsParser):
    """vLLM's ``granite`` (engine) tool-call format."""

    family = JsonFamily("granite", extract_granite)
    # vLLM runs engine-based tool parsers for tool_choice="none" too (they strip call markup),
    # and maps empty content to null.
    engine_based: ClassVar[bool] = True


tool_parser("granite", family="granite")(GraniteToolParser)
