"""A streaming JSON re-serializer: raw JSON text in, as the model writes it; out, the exact text
vLLM's one-shot path produces, ``json.dumps(json.loads(raw), ensure_ascii=...)``, byte by byte as
soon as each byte is decided.

Key order is the order keys are written, separators are ``", "`` and ``": "``, strings (keys
included) are re-escaped as ``json.dumps`` escapes them, numbers are re-printed once complete
(``1.50`` is ``1.5``, ``-0`` is ``0``, ``1e400`` is ``Infinity``). What cannot be decided yet is
held back: a partial escape (a ``\\ud83d`` waits for its low surrogate), and a number or literal
until the byte after it. Keys stream as they are written, like any string.

A repeated key is the one thing a stream cannot reproduce byte for byte: ``json.loads`` keeps
the *last* value at the *first* key's place, and the first value has already been sent. The
repeat is sent as written, so the arguments are a JSON text that every last-wins parser
(Python's ``json``, JavaScript's ``JSON.parse``) reads as the one-shot value. Holding keys back
to drop repeats instead would delay every member by the tokens of its key.

The state is a parse position: a mode, the open containers and the pending raw text; never the
value so far. At the first byte that breaks JSON, ``feed`` returns the output decided before it
and sets ``broken`` to the raw text from that byte on (held bytes included), the same whatever
the chunking.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Annotated

import msgspec

from tokenbridge.parsers.base import ParserState, Stateful
VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, AFTER, STRING, KEY_STRING, SCALAR, DONE = range(10)

#: Held raw text a well-formed value never needs (a 16k-digit number is treated as malformed),
#: and the deepest nesting accepted (``json.loads`` hits Python's recursion limit near 1000).
MAX_PENDING = 1 << 14
MAX_DEPTH = 256

_WS = re.compile(r"[ \t\n\r]*")
_PLAIN_STRICT = re.compile(r'[^"\\\x00-\x1f]+')
_PLAIN_LAX = re.compile(r'[^"\\]+')
_SCALAR = re.compile(r"[-+.0-9a-zA-Z]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = frozenset(("true", "false", "null", "NaN", "Infinity", "-Infinity"))
_COMPLETED_LITERALS = ("null", "true", "false", "Infinity", "-Infinity", "NaN")  # complete_truncated_json's order
_SCALAR_START = frozenset("-0123456789tfnNI")
_BACKSLASH = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")


class JsonStreamError(ValueError):
    """The text stopped being JSON (or exceeded a limit)."""


def canonical(raw: str, ensure_ascii: bool = False) -> str:
    """The one-shot form of a whole JSON text (what the stream must add up to)."""
    return json.dumps(json.loads(raw), ensure_ascii=ensure_ascii)


class JsonStreamState(ParserState):
    mode: Annotated[int, msgspec.Meta(ge=VALUE, le=DONE)]
    stack: Annotated[str, msgspec.Meta(max_length=MAX_DEPTH)]  # the open containers, "{" or "["
    pending: Annotated[str, msgspec.Meta(max_length=MAX_PENDING)]  # raw text read but not yet decided

    def check(self) -> None:
        # Not a pattern of the field: msgspec's pattern check costs more than the rest of a restore.
        if self.stack.strip("{["):
            raise ValueError("bad JSON stream state: the containers are '{' or '['")


class JsonStream(Stateful):
    """Re-serializes one JSON value; ``feed`` returns ``(output, consumed)``.

    ``consumed`` is how much of the fed text belongs to the value: all of it until the value
    completes (``done``), then the length up to its last byte; the caller owns the rest.
    ``raw_string``: a top-level string is given as its decoded text (xLAM/Granite 4 keep
    string arguments verbatim). ``strict=False`` allows raw control characters in strings.
    ``verbatim``: the output is the value's own text as written (Granite 3 and PLaMo keep the
    arguments' text), checked as JSON the same way.
    """

    State = JsonStreamState
    __slots__ = ("ensure_ascii", "strict", "raw_string", "verbatim", "mode", "stack", "pending", "broken", "_at",
                 "deferred")
    #: Hold a member's separator and key until its value begins (``CompletingJsonStream``).
    defers: bool = False

    def __init__(self, ensure_ascii: bool = False, strict: bool = True, raw_string: bool = False,
                 verbatim: bool = False) -> None:
        self.ensure_ascii = ensure_ascii
        self.strict = strict
        self.raw_string = raw_string
        self.verbatim = verbatim
        self.mode = VALUE
        self.stack = ""  # the open containers, "{" or "["
        self.pending = ""  # raw text read but not yet decided
        self.broken: str | None = None  # the raw text from the byte that broke JSON
        self._at = 0  # start of the step being scanned (where an error points)
        self.deferred = ""  # output held until the member's value begins (with ``defers``)

    def snapshot(self) -> JsonStreamState:
        return JsonStreamState(self.mode, self.stack, self.pending)

    def load(self, state: JsonStreamState) -> None:
        state.check()
        self.mode, self.stack, self.pending = state.mode, state.stack, state.pending

    @property
    def done(self) -> bool:
        return self.mode == DONE

    # ------------------------------------------------------------------------------ feeding

    def feed(self, text: str) -> tuple[str, int]:
        if self.broken is not None:
            return "", 0
        held = len(self.pending)
        s, self.pending = self.pending + text, ""
        out: list[str] = []
        try:
            i = self._scan(s, out, False)
        except JsonStreamError:
            self.broken = s[self._at :]
            return s[: self._at] if self.verbatim else "".join(out), len(text)
        return s[: i - len(self.pending)] if self.verbatim else "".join(out), max(0, i - held)

    def finish(self) -> str:
        """The rest of the output at the end of the text; ``broken`` is set if the value is
        malformed or incomplete (to the held raw text)."""
        if self.broken is not None:
            return ""
        s, self.pending = self.pending, ""
        out: list[str] = []
        try:
            i = self._scan(s, out, True)
            if self.mode != DONE:
                raise JsonStreamError("unexpected end of JSON text")
        except JsonStreamError:
            self.broken = s[self._at :]
            return s[: self._at] if self.verbatim else "".join(out)
        return s[:i] if self.verbatim else "".join(out)

    def _encode(self, text: str) -> str:
        return (encode_basestring_ascii if self.ensure_ascii else encode_basestring)(text)[1:-1]

    def _scan(self, s: str, out: list[str], final: bool) -> int:
        i, n = 0, len(s)
        while i < n or (final and self.mode == SCALAR):
            self._at = i
            mode = self.mode
            if mode == DONE:
                return i
            if mode in (STRING, KEY_STRING):
                if mode == KEY_STRING and self.defers:
                    key: list[str] = []
                    i = self._string(s, i, key)
                    self.deferred += "".join(key)
                else:
                    i = self._string(s, i, out)
                if i < 0:
                    return n
                continue
            if mode == SCALAR:
                j = _SCALAR.match(s, i).end()
                if j == n and not final:
                    if n - i > MAX_PENDING:
                        raise JsonStreamError("number too long")
                    self.pending = s[i:]
                    return n
                out.append(self._scalar(s[i:j]))
                i = j
                self._end_value()
                continue
            i = self._at = _WS.match(s, i).end()
            if i == n:
                return n
            c = s[i]
            if mode in (VALUE, VALUE_OR_CLOSE):
                i = self._value(c, i, out, mode == VALUE_OR_CLOSE)
            elif mode in (KEY, KEY_OR_CLOSE):
                if c == '"':
                    self.mode = KEY_STRING
                    self._separator(out, '"')
                elif c == "}" and mode == KEY_OR_CLOSE:
                    self._close(out, c)
                else:
                    raise JsonStreamError("object key expected")
                i += 1
            elif mode == COLON:
                if c != ":":
                    raise JsonStreamError("':' expected")
                self._separator(out, ": ")
                self.mode = VALUE
                i += 1
            else:  # AFTER
                top = self.stack[-1]
                if c == ",":
                    self._separator(out, ", ")
                    self.mode = VALUE if top == "[" else KEY
                elif c == ("}" if top == "{" else "]"):
                    self._close(out, c)
                else:
                    raise JsonStreamError("',' or closing bracket expected")
                i += 1
        return i

    def _separator(self, out: list[str], text: str) -> None:
        if self.defers:
            self.deferred += text
        else:
            out.append(text)

    def _value(self, c: str, i: int, out: list[str], may_close: bool) -> int:
        if self.deferred:
            out.append(self.deferred)
            self.deferred = ""
        if c == '"':
            self.mode = STRING
            if not (self.raw_string and not self.stack):
                out.append('"')
            return i + 1
        if c in "{[":
            if len(self.stack) >= MAX_DEPTH:
                raise JsonStreamError("nesting too deep")
            self.stack += c
            self.mode = KEY_OR_CLOSE if c == "{" else VALUE_OR_CLOSE
            out.append(c)
            return i + 1
        if c == "]" and may_close:
            self._close(out, c)
            return i + 1
        if c in _SCALAR_START:
            self.mode = SCALAR
            return i
        raise JsonStreamError("value expected")

    def _scalar(self, token: str) -> str:
        if len(token) > MAX_PENDING:
            raise JsonStreamError("number too long")
        if token in _LITERALS:
            return token
        if not _NUMBER.fullmatch(token):
            raise JsonStreamError(f"invalid literal or number {token[:20]!r}")
        try:
            return json.dumps(json.loads(token))
        except ValueError as e:  # an int past Python's digit limit
            raise JsonStreamError(str(e)) from None

    def _string(self, s: str, i: int, out: list[str]) -> int:
        """Reads string text from ``i``; returns the next index, or -1 when the rest is held."""
        n = len(s)
        is_key = self.mode == KEY_STRING
        plain = _PLAIN_STRICT if self.strict else _PLAIN_LAX
        raw = self.raw_string and not self.stack and not is_key
        while i < n:
            self._at = i
            m = plain.match(s, i)
            if m is not None:
                run, i = m.group(), m.end()
                if i == n and self.defers and not is_key and run[-1].isspace():
                    # a cut here strips the text (complete_truncated_json): blanks wait
                    body = run.rstrip()
                    self.pending = run[len(body):]
                    if body:
                        out.append(body if raw else self._encode(body))
                    return -1
            else:
                c = s[i]
                if c == '"':
                    if not raw:
                        out.append('"')
                    if is_key:
                        self.mode = COLON
                    else:
                        self._end_value()
                    return i + 1
                if c != "\\":
                    raise JsonStreamError("control character in string")
                decoded = self._escape(s, i)
                if decoded is None:
                    self.pending = s[i:]
                    return -1
                run, i = decoded
            out.append(run if raw else self._encode(run))
        return -1

    @staticmethod
    def _escape(s: str, i: int) -> tuple[str, int] | None:
        """The character an escape at ``i`` stands for and the index after it (None: not yet
        decidable). A high surrogate joins a following low one, as ``json.loads`` does."""
        n = len(s)
        if i + 1 >= n:
            return None
        c = s[i + 1]
        if c != "u":
            if c not in _BACKSLASH:
                raise JsonStreamError("invalid escape")
            return _BACKSLASH[c], i + 2
        hex1 = s[i + 2 : i + 6]
        if not all(h in _HEX for h in hex1):
            raise JsonStreamError("invalid \\uXXXX escape")
        if len(hex1) < 4:
            return None
        u = int(hex1, 16)
        if not 0xD800 <= u <= 0xDBFF:
            return chr(u), i + 6
        # json.loads looks for "\u" + 4 hex digits right after a high surrogate.
        tail = s[i + 6 : i + 12]
        if tail[:1] not in ("\\", "") or tail[1:2] not in ("u", ""):
            return chr(u), i + 6
        hex2 = tail[2:]
        if not all(h in _HEX for h in hex2):
            raise JsonStreamError("invalid \\uXXXX escape")
        if len(tail) < 6:
            return None
        low = int(hex2, 16)
        if 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00)), i + 12
        return chr(u), i + 6

    def _close(self, out: list[str], c: str) -> None:
        out.append(c)
        self.stack = self.stack[:-1]
        self._end_value()

    def _end_value(self) -> None:
        self.mode = AFTER if self.stack else DONE


class CompletingJsonStreamState(JsonStreamState):
    deferred: str  # a member's separator and key, until its value begins


class CompletingJsonStream(JsonStream):
    """A stream whose text may be cut short and is then completed as
    ``engine.json.complete_truncated_json`` completes it: a member's separator and key are held
    until its value begins (a member cut before its value is dropped), and ``complete`` closes
    what is open."""

    State = CompletingJsonStreamState
    defers = True

    def snapshot(self) -> CompletingJsonStreamState:
        return CompletingJsonStreamState(self.mode, self.stack, self.pending, self.deferred)

    def load(self, state: CompletingJsonStreamState) -> None:
        super().load(state)
        self.deferred = state.deferred

    def complete(self) -> str:
        """The output that closes the value at a cut: an open string (less a partial escape and
        trailing blanks, as the cut text is stripped),
        a pending number less a dangling sign, point or exponent, a partial literal, the open
        containers. Sets ``broken`` when the pending text cannot be completed."""
        if self.broken is not None or self.mode == DONE:
            return ""
        out = []
        if self.mode == SCALAR:
            held = self.pending
            if held[0] in "0123456789" or (held[:1] == "-" and held[1:2] not in ("I", "")):
                token = held.rstrip(".-+eE")
            else:
                token = next((lit for lit in _COMPLETED_LITERALS if lit.startswith(held)), "")
            try:
                out.append(self._scalar(token))
            except JsonStreamError:
                self.broken = held
                return ""
        elif self.mode == STRING:
            if self.pending.startswith("\\u") and len(self.pending) >= 6:  # a high surrogate alone
                out.append(self._encode(chr(int(self.pending[2:6], 16))))
            out.append("" if self.raw_string and not self.stack else '"')
        out += ["}" if c == "{" else "]" for c in reversed(self.stack)]
        self.mode, self.stack, self.pending, self.deferred = DONE, "", "", ""
        return "".join(out)
