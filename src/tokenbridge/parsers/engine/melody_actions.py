"""Cohere melody's action blocks: the one-shot reader (``read_actions``) and the same reading
as the block arrives (``ActionStream``), for the Cohere Command families.

Melody reads a block by keys in order rather than as JSON: the next ``"tool_call_id": "``
starts a call, its value up to an unescaped quote is the id, then ``"tool_name": "`` and its
value, then the raw ``"parameters"`` object (only when it holds at least one key; its text up
to where it first parses as JSON, up to 8 leading blanks per line removed, or the rest of the
block when it never does). A block ending in a backslash yields nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tokenbridge.parsers.base import ParserState, Stateful, ToolCallDelta
from tokenbridge.parsers.engine.json_stream import JsonStream, JsonStreamError, JsonStreamState

_CALL_ID = re.compile(r'"tool_call_id":\s*"')
_NAME = re.compile(r'"tool_name":\s*"')
_PARAMS_WITH_KEY = re.compile(r'"parameters":\s*\{\s*"')
_PARAMS = re.compile(r'"parameters":\s*')
_INDENT_LIMIT = 8


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


_STRICT_JSON = json.JSONDecoder(parse_constant=_reject_constant)


def _unescaped_quote(s: str, start: int) -> int:
    i = s.find('"', start)
    while i != -1:
        backslashes = len(s[start:i]) - len(s[start:i].rstrip("\\"))
        if backslashes % 2 == 0:
            return i
        i = s.find('"', i + 1)
    return -1


def _dedent(raw: str) -> str:
    """Up to 8 leading blanks removed from each line (melody's raw-parameter stream)."""
    out, removed, seen = [], 0, False
    for c in raw:
        if c == "\n":
            removed, seen = 0, False
        elif c.isspace():
            if removed < _INDENT_LIMIT and not seen:
                removed += 1
                continue
        else:
            seen = True
        out.append(c)
    return "".join(out)


def _json_value_end(s: str) -> int:
    """End of the JSON value at the start of ``s`` (strict: no NaN/Infinity), or -1."""
    try:
        return _STRICT_JSON.raw_decode(s)[1]
    except ValueError:
        return -1


def read_actions(block: str) -> list[tuple[str, str, str]]:
    """``(id, name, arguments)`` of each call melody reads in one action block."""
    calls: list[list[str]] = []
    if not block or block.endswith("\\"):
        return []
    pos = 0
    while True:
        m = _CALL_ID.search(block, pos)
        if m is None:
            break
        end = _unescaped_quote(block, m.end())
        if end == -1:
            break
        call = [block[m.end():end], "", ""]
        calls.append(call)
        pos = end + 1
        m = _NAME.search(block, pos)
        if m is None:
            break
        end = _unescaped_quote(block, m.end())
        if end == -1:
            break
        call[1] = block[m.end():end]
        pos = end + 1
        if _PARAMS_WITH_KEY.search(block, pos):
            m = _PARAMS.search(block, pos)
            start = m.end()
            n = _json_value_end(block[start:])
            if n == -1:
                call[2] = _dedent(block[start:])
                break
            call[2] = _dedent(block[start:start + n])
            pos = start + n
        else:
            brace = block.find("}", pos)
            if brace == -1:
                break
            pos = brace
    return [(c[0], c[1], c[2]) for c in calls if any(c)]
# Where the streamed action reader is in a block: looking for a call's id, reading it, looking
# for its name, reading it, looking for its parameters, reading their JSON, sending the rest of
# the block as they are (their JSON broke), holding the rest (decided at the block's end).
SEEK_ID, ID, SEEK_NAME, NAME, SEEK_PARAMS, VALUE, RAW, HOLD = range(8)
_KEYED = re.compile(r'\{\s*"')


class ActionState(ParserState):
    index: int = 0  # the open (or next) call's index
    pos: int = SEEK_ID
    buf: str = ""  # a possible start of the pattern looked for, an id or name so far, held text
    call_id: str = ""
    name: str = ""
    opened: bool = False  # the call was sent
    removed: int = 0  # leading blanks removed from the parameters' current line
    seen: bool = False  # the line has a character that is not blank
    value: JsonStreamState | None = None


class _StrictJson(JsonStream):
    """JSON as melody's decoder reads it: no NaN or Infinity."""

    def _scalar(self, token: str) -> str:
        if token in ("NaN", "Infinity", "-Infinity"):
            raise JsonStreamError("constant")
        return super()._scalar(token)


def _could_begin(text: str, literal: str) -> bool:
    """``text`` may be the start of ``literal``, blanks, ``"`` (a key's pattern)."""
    return literal.startswith(text) or (text.startswith(literal) and not text[len(literal):].strip())


def _possible_start(text: str, literal: str) -> str:
    """The end of ``text`` that may begin ``literal``, blanks and ``"``: from one of its last
    two quotes (the literal holds two), or nothing."""
    last = text.rfind('"')
    for j in (text.rfind('"', 0, last) if last > 0 else -1, last):
        if j != -1 and _could_begin(text[j:], literal):
            return text[j:]
    return ""


def _quote_end(text: str) -> int:
    """The first quote of ``text`` no backslash escapes, or -1."""
    i = text.find('"')
    while i != -1 and (i - len(text[:i].rstrip("\\"))) % 2:
        i = text.find('"', i + 1)
    return i


class ActionStream(Stateful):
    """One action block read as ``read_actions`` reads it, as it arrives: a call is sent when
    its name closes (with its id), and parameters that are an object with a key stream as
    written (up to 8 leading blanks per line removed), then the next call is looked for. What
    melody decides from the rest of the block (parameters that are not such an object, or
    missing) is held and decided at the block's end."""

    State = ActionState

    def __init__(self, index: int) -> None:
        self._value: JsonStream | None = None
        self.load(ActionState(index))

    def snapshot(self) -> ActionState:
        self.value = None if self._value is None else self._value.snapshot()
        return super().snapshot()

    def load(self, state: ActionState) -> None:
        super().load(state)
        self._value = None
        if state.value is not None:
            self._value = _StrictJson(verbatim=True)
            self._value.load(state.value)

    def _args(self, text: str, out: list[ToolCallDelta]) -> None:
        kept = []
        for c in text:
            if c == "\n":
                self.removed, self.seen = 0, False
            elif c.isspace() and not self.seen and self.removed < _INDENT_LIMIT:
                self.removed += 1
                continue
            elif not c.isspace():
                self.seen = True
            kept.append(c)
        if kept:
            out.append(ToolCallDelta(self.index, arguments="".join(kept)))

    def _open(self, out: list[ToolCallDelta]) -> None:
        if not self.opened:
            self.opened = True
            out.append(ToolCallDelta(self.index, name=self.name, id=self.call_id or None))

    def feed(self, text: str, out: list[ToolCallDelta]) -> None:
        while True:
            pos = self.pos
            if pos in (SEEK_ID, SEEK_NAME):
                buf = self.buf + text
                m = (_CALL_ID if pos == SEEK_ID else _NAME).search(buf)
                if m is None:
                    self.buf = _possible_start(buf, '"tool_call_id":' if pos == SEEK_ID else '"tool_name":')
                    return
                self.pos, self.buf, text = pos + 1, "", buf[m.end():]
            elif pos in (ID, NAME):
                buf = self.buf + text
                end = _quote_end(buf)
                if end == -1:
                    self.buf = buf
                    return
                self.buf, text = "", buf[end + 1:]
                if pos == ID:
                    self.call_id, self.pos = buf[:end], SEEK_NAME
                else:
                    self.name, self.pos = buf[:end], SEEK_PARAMS
                    if self.call_id or self.name:
                        self._open(out)
            elif pos == SEEK_PARAMS:
                self.buf += text
                m = _PARAMS.search(self.buf)
                if m is None:
                    return
                rest = self.buf[m.end():]
                if _KEYED.match(rest) is None:
                    if rest and not (rest[0] == "{" and not rest[1:].strip()):
                        self.pos = HOLD  # not an object with a key: decided at the block's end
                    return
                self._open(out)
                self.pos, self.buf, self._value, self.removed, self.seen = VALUE, "", _StrictJson(verbatim=True), 0, False
                text = rest
            elif pos == VALUE:
                value = self._value
                sent, used = value.feed(text)
                if value.broken is not None:
                    self._args(sent + value.broken, out)
                    self.pos, self._value = RAW, None
                    return
                self._args(sent, out)
                if not value.done:
                    return
                self.pos, self._value, self.index, self.opened = SEEK_ID, None, self.index + 1, False
                self.call_id = self.name = ""
                text = text[used:]
            elif pos == RAW:
                self._args(text, out)
                return
            else:
                self.buf += text
                return

    def end(self, out: list[ToolCallDelta]) -> int:
        """The block ended: what was held is decided as melody decides it; returns the next
        call's index."""
        pos = self.pos
        if pos in (SEEK_NAME, NAME) and self.call_id:
            self.name = ""
            self._open(out)
        elif pos == VALUE:
            self._args(self._value.pending, out)
        elif pos in (SEEK_PARAMS, HOLD):
            calls = read_actions(f'"tool_call_id": "{self.call_id}" "tool_name": "{self.name}"' + self.buf)
            if calls and calls[0][:2] == (self.call_id, self.name):
                first, *calls = calls
                if first[2]:
                    self._open(out)
                    out.append(ToolCallDelta(self.index, arguments=first[2]))
            if self.opened:
                self.index, self.opened = self.index + 1, False
            for call_id, name, args in calls:
                out.append(ToolCallDelta(self.index, name=name, arguments=args, id=call_id or None))
                self.index += 1
        return self.index + (1 if self.opened else 0)
