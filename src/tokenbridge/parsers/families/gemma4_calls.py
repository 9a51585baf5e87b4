"""Gemma 4's call syntax, read whole and as it streams (the family's parsers are in
``families/gemma4.py``): ``<|tool_call>call:name{key:<|"|>text<|"|>,n:42}<tool_call|>``.

``--tool-call-streaming incremental`` (``Gemma4StreamedCalls``) replays ``extract_gemma4``'s pass
as the text arrives. A call opens when its name ends at ``{``; each argument follows when its
value starts: a quoted value the tool's schema leaves a string streams as written, any other
(bare, ``{…}``, ``[…]``) is held to its end and sent as the one-shot reading types it. Outside a
streaming string, the text the one-shot answer strips from the end of the arguments (blank, one
``}``) is held until more follows. Held to the end, as in ``whole`` mode: the content (stripped, cut after the first named
call, and turned to reasoning by a ``<channel|>`` anywhere later), a call written
``name(…)`` (its closing parenthesis is decided by the count over the whole body) and one
without a name (named from its JSON body).

Malformed output, the documented answer: a streaming quoted value left open when the call ends
is closed there, with all its text (the one-shot answer takes the rest of the body less its
stripped end); a repeated key is sent again (the one-shot answer keeps the last value at the
first one's place).
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Annotated, Any, ClassVar

import msgspec

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.json import name_and_args_from_json
from tokenbridge.parsers.engine.lexer import partial_suffix, special_token_texts
from tokenbridge.parsers.engine.schema import coerce_value, fix_arg_types, stays_string

CHANNEL_START = "<|channel>"
CHANNEL_END = "<channel|>"
CALL_START = "<|tool_call>"
CALL_END = "<tool_call|>"
QUOTE = '<|"|>'
MARKERS = (CHANNEL_START, CHANNEL_END, CALL_START, CALL_END)
NAME_IN_JSON = re.compile(r'"name"\s*:\s*"([^"]*)"')


def _bracketed_end(s: str, i: int, open_ch: str, close_ch: str) -> tuple[int, bool]:
    """Index after the bracket group opened at ``s[i]`` (quoted text skipped) and if it closed."""
    depth, n = 1, len(s)
    i += 1
    while i < n and depth > 0:
        if s.startswith(QUOTE, i):
            j = s.find(QUOTE, i + len(QUOTE))
            i = n if j == -1 else j + len(QUOTE)
            continue
        if s[i] == open_ch:
            depth += 1
        elif s[i] == close_ch:
            depth -= 1
        i += 1
    return i, depth == 0


def _value(s: str, i: int, stops: str, partial: bool) -> tuple[object, int, bool]:
    """One value at ``s[i]``: ``(value, next index, keep going)``; bare values stay text."""
    n = len(s)
    if s.startswith(QUOTE, i):
        start = i + len(QUOTE)
        end = s.find(QUOTE, start)
        if end == -1:
            return s[start:], n, False
        return s[start:end], end + len(QUOTE), True
    if s[i] in "{[":
        close = "}" if s[i] == "{" else "]"
        end, closed = _bracketed_end(s, i, s[i], close)
        inner = s[i + 1 : end - 1] if closed else s[i + 1 : end]
        parse = parse_fields if s[i] == "{" else parse_items
        return parse(inner, partial=not closed), end, True
    start = i
    while i < n and s[i] not in stops:
        i += 1
    if (partial and i >= n) or i == start:
        return None, i, False
    raw = s[start:i].strip()
    if partial and raw.endswith("."):
        return None, i, False
    return raw, i, True


def parse_fields(s: str, partial: bool = False) -> dict:
    """Gemma's ``key:value,…`` object body as a dict (``partial``: an unclosed nested one)."""
    out: dict = {}
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in " ,\n\t":
            i += 1
        if i >= n:
            break
        colon = s.find(":", i)
        if colon == -1:
            break
        key = s[i:colon].strip()
        if len(key) >= 2 * len(QUOTE) and key.startswith(QUOTE) and key.endswith(QUOTE):
            key = key[len(QUOTE) : -len(QUOTE)]
        i = colon + 1
        while i < n and s[i] in " \n\t":
            i += 1
        if i >= n:
            if not partial:
                out[key] = ""
            break
        value, i, more = _value(s, i, ",}]", partial)
        if value is None and not more:
            break
        out[key] = value
        if not more:
            break
    return out


def parse_items(s: str, partial: bool = False) -> list:
    """Gemma's ``[v,…]`` array body as a list."""
    out: list = []
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in " ,\n\t":
            i += 1
        if i >= n:
            break
        value, i, more = _value(s, i, ",]", partial)
        if value is None and not more:
            break
        out.append(value)
        if not more:
            break
    return out


def arguments_json(raw: str) -> str:
    """The call body (closer included) as vLLM's JSON arguments, before schema coercion."""
    text = raw.strip()
    if text.endswith("}") or (text.endswith(")") and text.count("(") < text.count(")")):
        text = text[:-1]
    return json.dumps(parse_fields(text), ensure_ascii=False)



def literals(ctx: ParseContext) -> tuple[tuple[str, ...], list[str]]:
    """``extract_gemma4``'s markers and the special tokens it drops."""
    markers = MARKERS if ctx.reasoning_parser is not None else (CALL_START, CALL_END)
    drops = [t for t in special_token_texts(ctx.vocab, (*MARKERS, QUOTE)) if t not in markers]
    return markers, drops


# The pass's states, and where the argument reader is in a streamed call's ``{…}``.
CONTENT, REASONING, PREAMBLE, NAME, ARGS, WHOLE = range(6)
LEAD, SKIP, KEY, GAP, STRING, HOLD, BARE, STOP = range(8)


class Gemma4StreamedState(ParserState):
    _pending: str  # text that may begin a literal
    _state: Annotated[int, msgspec.Meta(ge=CONTENT, le=WHOLE)]
    _before: str  # content before the first call
    _conv: int  # len(_before) at its first channel marker (-1: none)
    _after: str  # content after it, while no call is announced
    _calls: Annotated[int, msgspec.Meta(ge=0)]  # calls started
    _announced: bool
    _index: Annotated[int, msgspec.Meta(ge=0)]  # calls sent
    _name: str
    _raw: str  # a held call's body
    _tail: str  # body text the one-shot reading may strip (trailing blank, one ``}``)
    _rest: str  # body text the reader has not read: a possible cut ``<|"|>``
    _where: Annotated[int, msgspec.Meta(ge=LEAD, le=STOP)]
    _key: str
    _held: str  # the key, or a held value so far
    _depth: Annotated[int, msgspec.Meta(ge=0)]
    _quoted: bool  # inside a quoted string of a held container
    _streams: bool  # the quoted value streams
    _members: Annotated[int, msgspec.Meta(ge=0)]
    _head: str  # the first 8 characters of the text
    _window: str  # its last 9, to find a channel marker across chunks
    _has_start: bool
    _has_end: bool


class Gemma4StreamedCalls(ToolParser):
    """``extract_gemma4`` streamed (see the module docstring)."""

    State = Gemma4StreamedState
    streams_arguments = True
    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        markers, drops = literals(ctx)
        self._markup = ctx.reasoning_parser is not None
        self._drops = frozenset(drops)
        self._lits = sorted({*markers, *drops}, key=len, reverse=True)
        self._firsts = {lit[0] for lit in self._lits}
        self._prefixes = frozenset(lit[:k] for lit in self._lits for k in range(1, len(lit)))
        self._pending = self._before = self._after = self._name = self._raw = self._tail = self._rest = ""
        self._key = self._held = self._head = self._window = ""
        self._state, self._conv, self._calls, self._index, self._where = CONTENT, -1, 0, 0, LEAD
        self._announced = self._quoted = self._streams = self._has_start = self._has_end = False
        self._depth = self._members = 0

    # -- the pass ------------------------------------------------------------------------------

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if len(self._head) < 8:
            self._head = (self._head + text)[:8]
        seen = self._window + text
        self._has_start = self._has_start or CHANNEL_START in seen
        self._has_end = self._has_end or CHANNEL_END in seen
        self._window = seen[-9:]
        self._lex(self._pending + text, out, final=False)
        return out

    def _lex(self, buf: str, out: Delta, final: bool) -> None:
        i, n, plain = 0, len(buf), 0
        while i < n:
            if buf[i] not in self._firsts:
                i += 1
                continue
            if not final and n - i < len(self._lits[0]) and buf[i:] in self._prefixes:
                break
            hit = next((lit for lit in self._lits if buf.startswith(lit, i)), None)
            if hit is None:
                i += 1
                continue
            self._text(buf[plain:i], out)
            if hit not in self._drops:
                self._hit(hit, out)
            i = plain = i + len(hit)
        self._text(buf[plain:i], out)
        self._pending = buf[i:]

    def _hit(self, hit: str, out: Delta) -> None:
        state = self._state
        if state in (CONTENT, REASONING):
            if hit == CALL_START:
                self._calls += 1
                self._state, self._name = PREAMBLE, ""
            elif hit in (CHANNEL_START, CHANNEL_END):
                if self._conv < 0 and not self._calls:
                    self._conv = len(self._before)
                self._state = REASONING if hit == CHANNEL_START else CONTENT
        elif hit == CALL_END:
            self._end_call(out)
        elif state == NAME:
            self._name += hit
        elif state in (ARGS, WHOLE):
            self._body(hit, out)

    def _text(self, text: str, out: Delta) -> None:
        if not text:
            return
        state = self._state
        if state == CONTENT:
            if not self._calls:
                self._before += text
            elif not self._announced:
                self._after += text
        elif state == PREAMBLE:
            colon = text.find(":")
            if colon >= 0:
                self._state = NAME
                self._text(text[colon + 1:], out)
        elif state == NAME:
            opener = min((k for k in (text.find("{"), text.find("(")) if k >= 0), default=-1)
            if opener < 0:
                self._name += text
                return
            self._name += text[:opener]
            self._open_call(text[opener], out)
            self._text(text[opener + 1:], out)
        elif state in (ARGS, WHOLE):
            self._body(text, out)

    def _announce(self) -> None:
        self._announced, self._after = True, ""

    def _open_call(self, opener: str, out: Delta) -> None:
        if self._name:
            self._announce()
        name = self._name.strip()
        self._raw = self._tail = self._rest = self._held = ""
        self._where, self._members = LEAD, 0
        self._state = ARGS if name and opener == "{" else WHOLE
        if name:
            out.tool_calls.append(ToolCallDelta(index=self._index, name=name))
            self._index += 1

    def _end_call(self, out: Delta) -> None:
        """The call ends at ``<tool_call|>`` or the end of the text."""
        state, name, self._state = self._state, self._name.strip(), CONTENT
        if state in (PREAMBLE, NAME):
            if self._name:
                self._announce()
            if name:
                out.tool_calls.append(ToolCallDelta(index=self._index, name=name, arguments="{}"))
                self._index += 1
        elif state == WHOLE and name:
            args = arguments_json(self._raw) if self._raw.strip() else "{}"
            self._send(fix_arg_types(args, name, self.ctx.tools), out)
        elif state == WHOLE and self._raw.strip():
            m = NAME_IN_JSON.search(self._raw)
            if m and m.group(1):
                self._announce()
            name, args = name_and_args_from_json(self._raw)
            if name:
                out.tool_calls.append(ToolCallDelta(index=self._index, name=name,
                                                    arguments=fix_arg_types(args, name, self.ctx.tools)))
                self._index += 1
        elif state == ARGS:  # the stripped end is dropped, unless a streaming string had it
            tail = self._tail if self._where == STRING and self._streams else ""
            self._tail = ""
            self._read(self._rest + tail, out, final=True)
            self._close_value(out)
            self._send("}" if self._members else "{}", out)
        self._raw = self._rest = self._held = ""

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        self._lex(self._pending, out, final=True)
        if self._state not in (CONTENT, REASONING):
            self._end_call(out)
        before = self._before
        if self._head and not self._has_start and (
                self._has_end or self._head.startswith("thought\n") or self._head == "thought"):
            if self._markup:  # the injected opener makes the text up to the first channel marker reasoning
                before = before[self._conv:] if self._conv >= 0 else ""
            else:
                before = CHANNEL_START + before
        content = before + ("" if self._announced else self._after)
        if self._index:
            content = content.strip()
        elif self._calls and not content.strip():
            content = ""
        out.content = content
        self.null_content = not content
        self._before = self._after = ""
        return out

    # -- a streamed call's arguments -------------------------------------------------------------

    def _send(self, text: str, out: Delta) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(index=self._index - 1, arguments=text))

    def _body(self, text: str, out: Delta) -> None:
        if self._state == WHOLE:
            self._raw += text
            return
        buf, self._tail = self._tail + text, ""
        if self._where == STRING and self._streams:  # a streaming string's text goes out as it comes
            buf = self._rest + buf
            end = buf.find(QUOTE)
            cut = len(buf) if end < 0 else end + len(QUOTE)
            self._read(buf[:cut], out, final=False)
            buf = buf[cut:]
        j = len(buf.rstrip())
        if j and buf[j - 1] == "}":
            j -= 1
        self._tail = buf[j:]
        self._read(self._rest + buf[:j], out, final=False)

    def _member(self, value: str) -> str:
        self._members += 1
        return f'{", " if self._members > 1 else "{"}{encode_basestring(self._key)}: {value}'

    def _typed(self, value: Any) -> str:
        return json.dumps(coerce_value(value, self.ctx.tools, self._name.strip(), self._key), ensure_ascii=False)

    def _read(self, buf: str, out: Delta, final: bool) -> None:
        """``parse_fields`` over the body as it comes (see ``_value`` for each kind of value)."""
        self._rest, i, n = "", 0, len(buf)
        while i < n:
            where = self._where
            if where in (LEAD, SKIP, GAP):
                skip = str.isspace if where == LEAD else (" ,\n\t" if where == SKIP else " \n\t").__contains__
                while i < n and skip(buf[i]):
                    i += 1
                if i == n:
                    break
                if where != GAP:
                    self._where, self._held = KEY, ""
                elif buf.startswith(QUOTE, i):
                    self._begin_string(out)
                    i += len(QUOTE)
                elif not final and QUOTE.startswith(buf[i:]):
                    self._rest = buf[i:]
                    return
                elif buf[i] in "{[":
                    self._where, self._held, self._depth, self._quoted = HOLD, buf[i], 1, False
                    i += 1
                else:
                    self._where, self._held = BARE, ""
            elif where == KEY:
                colon = buf.find(":", i)
                self._held += buf[i:] if colon < 0 else buf[i:colon]
                if colon < 0:
                    break
                key = self._held.strip()
                if len(key) >= 2 * len(QUOTE) and key.startswith(QUOTE) and key.endswith(QUOTE):
                    key = key[len(QUOTE):-len(QUOTE)]
                self._where, self._key, self._held, i = GAP, key, "", colon + 1
            elif where == STRING:
                end = buf.find(QUOTE, i)
                stop = end if end >= 0 else n - (0 if final else partial_suffix(buf[i:], (QUOTE,)))
                self._string_text(buf[i:stop], out)
                if end < 0:
                    self._rest = buf[stop:]
                    return
                self._send('"' if self._streams else self._member(self._typed(self._held)), out)
                self._where, self._held, i = SKIP, "", end + len(QUOTE)
            elif where == HOLD:
                i = self._hold(buf, i, out, final)
                if i < 0:
                    return
            elif where == BARE:
                stop = next((k for k in range(i, n) if buf[k] in ",}]"), n)
                self._held += buf[i:stop]
                if stop == n:
                    break
                if not self._held:
                    self._where = STOP
                    break
                self._send(self._member(self._typed(self._held.strip())), out)
                self._where, self._held, i = SKIP, "", stop
            else:
                break

    def _begin_string(self, out: Delta) -> None:
        self._where, self._held = STRING, ""
        self._streams = stays_string(self.ctx.tools, self._name.strip(), self._key)
        if self._streams:
            self._send(self._member('"'), out)

    def _string_text(self, text: str, out: Delta) -> None:
        if self._streams:
            self._send(encode_basestring(text)[1:-1] if text else "", out)
        else:
            self._held += text

    def _hold(self, buf: str, i: int, out: Delta, final: bool) -> int:
        """A ``{…}``/``[…]`` value, counted as ``_bracketed_end`` counts it; -1: wait for more."""
        open_ch = self._held[0]
        close_ch = "}" if open_ch == "{" else "]"
        n = len(buf)
        while i < n and self._depth:
            if self._quoted:
                end = buf.find(QUOTE, i)
                stop = end if end >= 0 else n - (0 if final else partial_suffix(buf[i:], (QUOTE,)))
                self._held += buf[i:stop if end < 0 else end + len(QUOTE)]
                if end < 0:
                    self._rest = buf[stop:]
                    return -1
                self._quoted, i = False, end + len(QUOTE)
                continue
            if buf.startswith(QUOTE, i):
                self._quoted, self._held, i = True, self._held + QUOTE, i + len(QUOTE)
                continue
            if not final and QUOTE.startswith(buf[i:]):
                self._rest = buf[i:]
                return -1
            ch = buf[i]
            self._depth += (ch == open_ch) - (ch == close_ch)
            self._held += ch
            i += 1
        if self._depth:
            return n
        self._send(self._member(self._typed(_value(self._held, 0, ",}]", False)[0])), out)
        self._where, self._held = SKIP, ""
        return i

    def _close_value(self, out: Delta) -> None:
        """The body ended inside a value: what the one-shot reading makes of it."""
        where = self._where
        if where == STRING:
            self._send('"' if self._streams else self._member(self._typed(self._held)), out)
        elif where == HOLD:
            self._send(self._member(self._typed(_value(self._held, 0, ",}]", False)[0])), out)
        elif where == BARE and self._held:
            self._send(self._member(self._typed(self._held.strip())), out)
        elif where == GAP:
            self._send(self._member(self._typed("")), out)
        self._where = STOP
