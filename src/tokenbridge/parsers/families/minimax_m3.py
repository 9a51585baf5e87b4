"""MiniMax-M3's parameter elements, read whole and as they stream (the family's calls and
reasoning are in ``families/minimax.py``).

Inside ``<invoke name="…">`` every parameter is an element whose tags carry the
``]<]minimax[>[`` namespace: ``NS<city>Paris NS</city>``. An element holding other elements is an
object (an array where the schema says so, list items render as ``<item>``); vLLM 0.33 types
each value by the tool's schema and stops at the first malformed or unterminated element.

``--tool-call-streaming incremental`` (``M3StreamedArgs``): each parameter's key is sent when its
tag closes if the schema leaves it a string; its text then streams as written (leading whitespace
is held: an element may still follow, making it an object, which is then held to its end). Any
other parameter is held to its end and sent as the one-shot answer types it. Malformed output,
the documented answer: a string parameter left open when the call ends, or that an element
follows after text, is closed there (the one-shot answer drops it, or makes it an object) and the
call's later parameters are not read; a repeated parameter is sent again (the one-shot answer
collects the values into a list).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

from tokenbridge.parsers.base import Delta
from tokenbridge.parsers.engine.lexer import partial_suffix
from tokenbridge.parsers.engine.schema import coerce_string, coerce_value, schema_types, stays_string, tool_properties
from tokenbridge.parsers.engine.tag_stream import LiveCall, StreamedTagArgs, StreamedTagState

MINIMAX_M3_NS = "]<]minimax[>["


_M3_ELEMENT_OPEN = MINIMAX_M3_NS + "<"


_M3_ELEMENT_CLOSE = MINIMAX_M3_NS + "</"


_M3_MAX_DEPTH = 128


def _m3_element(text: str, pos: int, depth: int) -> tuple[str, Any, int] | None:
    """The element opening at ``pos`` as (name, value, end), or None when malformed/open.
    A value is the element's text, or its (name, value) children in order."""
    if depth > _M3_MAX_DEPTH:
        return None
    start = pos + len(_M3_ELEMENT_OPEN)
    gt = text.find(">", start)
    if gt <= start:
        return None
    tag = text[start:gt]
    if tag.startswith("/") or not tag.strip():
        return None
    closer = f"{_M3_ELEMENT_CLOSE}{tag}>"
    pos = gt + 1
    texts: list[str] = []
    children: list[tuple[str, Any]] = []
    while True:
        mark = text.find(MINIMAX_M3_NS, pos)
        if mark < 0:
            return None
        texts.append(text[pos:mark])
        if text.startswith(closer, mark):
            pos = mark + len(closer)
            break
        if not text.startswith(_M3_ELEMENT_OPEN, mark):
            return None
        child = _m3_element(text, mark, depth + 1)
        if child is None:
            return None
        children.append(child[:2])
        pos = child[2]
    body = "".join(texts)
    if not children:
        return tag, body, pos
    if body.strip():
        key = "$text"
        while any(k == key for k, _ in children):
            key = "$" + key
        children.append((key, body))
    return tag, children, pos


def _m3_params(raw: str) -> list[tuple[str, Any]]:
    """Top-level parameter elements, up to the first malformed or unterminated one."""
    params: list[tuple[str, Any]] = []
    pos = 0
    while True:
        while pos < len(raw) and raw[pos].isspace():
            pos += 1
        if not raw.startswith(_M3_ELEMENT_OPEN, pos):
            return params
        element = _m3_element(raw, pos, 1)
        if element is None:
            return params
        params.append(element[:2])
        pos = element[2]


def _container(schema: dict) -> tuple[str, dict] | None:
    """The first array/object alternative of ``schema`` as (kind, schema)."""
    types = schema.get("type")
    for kind in ("array", "object"):
        if types == kind or (isinstance(types, list) and kind in types):
            return kind, schema
    if types is None:
        if "items" in schema:
            return "array", schema
        if "properties" in schema or "additionalProperties" in schema:
            return "object", schema
    for key in ("anyOf", "oneOf"):
        for choice in schema.get(key) or ():
            if isinstance(choice, dict):
                found = _container(choice)
                if found:
                    return found
    return None


def _m3_value(value: Any, schema: Any) -> Any:
    schema = schema if isinstance(schema, dict) else None
    container = _container(schema) if schema is not None else None
    if isinstance(value, str):
        if schema is None:
            return value
        types = schema_types(schema)
        if container is not None and "string" not in types and not value.strip():
            return [] if container[0] == "array" else {}
        return coerce_string(value, types)
    if container is not None and container[0] == "array":
        items = container[1].get("items")
        return [_m3_value(child, items) for _, child in value]
    return _m3_object(value, container[1] if container is not None else None)


def _m3_object(elements: list[tuple[str, Any]], schema: dict | None) -> dict:
    """Named elements as an object; a repeated name collects its values into a list."""
    props = (schema or {}).get("properties") or {}
    extra = (schema or {}).get("additionalProperties")
    out: dict[str, Any] = {}
    lists: set[str] = set()
    for key, element in elements:
        value = _m3_value(element, props.get(key, extra))
        if key not in out:
            out[key] = value
        elif key in lists:
            out[key].append(value)
        else:
            out[key] = [out[key], value]
            lists.add(key)
    return out


def minimax_m3_args(raw: str, properties: dict) -> str:
    """``<k>v</k>`` elements (all namespaced) typed by the tool schema; nested elements become
    objects, or arrays where the schema says so (list items render as ``<item>``)."""
    return json.dumps(_m3_object(_m3_params(raw), {"properties": properties or {}}), ensure_ascii=False)



# Where the streamed reader is in the call's arguments, and what becomes of the parameter.
GAP, TAG, BODY, STOP = range(4)
STREAM, HOLD = range(2)


class M3Call(LiveCall):
    """The call being streamed; ``held`` is a held parameter's markup so far."""

    stack: list[str] = []  # tags of the held parameter's open elements, its own first
    rest: str = ""  # text not read yet: what may start a marker, or an unfinished tag
    ws: str = ""  # a string parameter's leading whitespace, held
    keyed: bool = False  # the parameter's key was sent


class M3StreamedState(StreamedTagState):
    live: M3Call | None = None


class M3StreamedArgs(StreamedTagArgs):
    """The parameter elements streamed (see the module docstring)."""

    State = M3StreamedState
    Live = M3Call

    def _arg(self, value: str, out: Delta) -> None:
        live = self.live
        buf, i = live.rest + value, 0
        live.rest = ""
        while i < len(buf) and live.where != STOP:
            if live.where == GAP:
                j = i
                while j < len(buf) and buf[j].isspace():
                    j += 1
                if buf.startswith(_M3_ELEMENT_OPEN, j):
                    live.where, i = TAG, j + len(_M3_ELEMENT_OPEN)
                elif _M3_ELEMENT_OPEN.startswith(buf[j:]):
                    live.rest = buf[j:]
                    return
                else:  # text between parameters: the one-shot answer reads no further
                    live.where = STOP
            elif live.where == TAG:
                gt = buf.find(">", i)
                if gt == -1:
                    live.rest = buf[i:]
                    return
                tag = buf[i:gt]
                if tag.startswith("/") or not tag.strip():
                    live.where = STOP
                else:
                    self._begin(tag, out)
                    i = gt + 1
            elif live.fate == STREAM:
                i = self._stream(buf, i, out)
            else:
                i = self._hold(buf, i, out)

    def _begin(self, key: str, out: Delta) -> None:
        live = self.live
        live.where, live.key, live.ws, live.keyed = BODY, key, "", False
        if stays_string(self.tools, live.name, key):
            live.fate, live.started = STREAM, False
            self._send(self._key(), out)
        else:
            live.fate, live.held, live.stack = HOLD, f"{_M3_ELEMENT_OPEN}{key}>", [key]

    def _key(self) -> str:
        live = self.live
        live.members += 1
        live.keyed = True
        return f'{", " if live.members > 1 else ""}{encode_basestring(live.key)}: '

    def _text(self, text: str, out: Delta) -> None:
        live = self.live
        if live.started:
            self._send(encode_basestring(text)[1:-1], out)
            return
        live.ws += text
        if live.ws.strip():
            self._send('"' + encode_basestring(live.ws)[1:-1], out)
            live.started, live.ws = True, ""

    def _stream(self, buf: str, i: int, out: Delta) -> int:
        """A string parameter's text up to its close; an element opening in it while it is
        blank makes it a held object."""
        live = self.live
        mark = buf.find(MINIMAX_M3_NS, i)
        if mark == -1:
            keep = partial_suffix(buf[i:], (MINIMAX_M3_NS,))
            self._text(buf[i : len(buf) - keep], out)
            live.rest = buf[len(buf) - keep :]
            return len(buf)
        self._text(buf[i:mark], out)
        closer, tail = f"{_M3_ELEMENT_CLOSE}{live.key}>", buf[mark:]
        if tail.startswith(closer):
            self._end_string(out)
            live.where = GAP
            return mark + len(closer)
        if closer.startswith(tail) or _M3_ELEMENT_OPEN.startswith(tail):
            live.rest = tail
            return len(buf)
        if tail.startswith(_M3_ELEMENT_OPEN) and not live.started:
            live.fate, live.held, live.stack = HOLD, f"{_M3_ELEMENT_OPEN}{live.key}>{live.ws}", [live.key]
            return mark
        self._stop(out)
        return len(buf)

    def _hold(self, buf: str, i: int, out: Delta) -> int:
        """A held parameter's markup, its elements tracked as the one-shot reading nests them."""
        live = self.live
        mark = buf.find(MINIMAX_M3_NS, i)
        if mark == -1:
            keep = partial_suffix(buf[i:], (MINIMAX_M3_NS,))
            live.held += buf[i : len(buf) - keep]
            live.rest = buf[len(buf) - keep :]
            return len(buf)
        live.held += buf[i:mark]
        closer, tail = f"{_M3_ELEMENT_CLOSE}{live.stack[-1]}>", buf[mark:]
        if tail.startswith(closer):
            live.held += closer
            live.stack.pop()
            if not live.stack:
                self._end_held(out)
            return mark + len(closer)
        if closer.startswith(tail) or _M3_ELEMENT_OPEN.startswith(tail):
            live.rest = tail
            return len(buf)
        gt = buf.find(">", mark + len(_M3_ELEMENT_OPEN))
        if tail.startswith(_M3_ELEMENT_OPEN) and gt == -1:
            live.rest = tail
            return len(buf)
        tag = buf[mark + len(_M3_ELEMENT_OPEN) : gt]
        if not tail.startswith(_M3_ELEMENT_OPEN) or tag.startswith("/") or not tag.strip() or (
                len(live.stack) >= _M3_MAX_DEPTH):
            self._stop(out)
            return len(buf)
        live.held += buf[mark : gt + 1]
        live.stack.append(tag)
        return gt + 1

    def _end_string(self, out: Delta) -> None:
        live = self.live
        self._send('"' if live.started else encode_basestring(live.ws), out)
        live.ws = ""

    def _end_held(self, out: Delta) -> None:
        live = self.live
        element = _m3_element(live.held, 0, 1)
        props = tool_properties(self.tools, live.name)
        value = coerce_value(_m3_value(element[1], props.get(live.key)), self.tools, live.name, live.key)
        self._send(("" if live.keyed else self._key()) + json.dumps(value, ensure_ascii=False), out)
        live.where, live.held, live.stack, live.ws = GAP, "", [], ""

    def _stop(self, out: Delta) -> None:
        """Malformed markup: an open parameter whose key was sent is closed as a string."""
        live = self.live
        if live.where == BODY and live.keyed:
            self._end_string(out)
        live.where, live.held, live.stack, live.rest = STOP, "", [], ""

    def _end_live(self, out: Delta) -> None:
        if self.live is None:
            return
        self._stop(out)
        self._send("}", out)
        self.live = None
