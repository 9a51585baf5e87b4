"""A streaming JSON re-serializer: raw JSON text in, as the model writes it; out, the exact text
vLLM's one-shot path produces, ``json.dumps(json.loads(raw), ensure_ascii=...)``, byte by byte as
soon as each byte is decided.

Key order is the order keys are written, separators are ``", "`` and ``": "``, strings are
re-escaped as ``json.dumps`` escapes them, numbers are re-printed once complete (``1.50`` is
``1.5``, ``-0`` is ``0``, ``1e400`` is ``Infinity``). What cannot be decided yet is held back: a
partial escape (a ``\\ud83d`` waits for its low surrogate), a number or literal until the byte
after it, and an object key until its ``:`` (a key may repeat).

A repeated key is the one thing a stream cannot reproduce: ``json.loads`` keeps the *last* value
at the *first* key's place, and the first value has already been sent. The re-serializer keeps
the first and drops the repeat, so the arguments stay valid JSON with the one-shot key set.

The state is a parse position: a mode, the open containers, the keys of each open object
(as 64-bit digests), and the pending raw text; never the value so far. At the first byte that
breaks JSON, ``feed`` returns the output decided before it and sets ``broken`` to the raw text
from that byte on (held bytes included), the same whatever the chunking.
"""

from __future__ import annotations

import hashlib
import json
import re
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, AFTER, STRING, KEY_STRING, SCALAR, DONE = range(10)
MODES = range(10)

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
_SCALAR_START = frozenset("-0123456789tfnNI")
_BACKSLASH = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")


class JsonStreamError(ValueError):
    """The text stopped being JSON (or exceeded a limit)."""


def key_digest(key: str) -> int:
    """A stable 64-bit digest of an object key (the same in every worker process)."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def canonical(raw: str, ensure_ascii: bool = False) -> str:
    """The one-shot form of a whole JSON text (what the stream must add up to)."""
    return json.dumps(json.loads(raw), ensure_ascii=ensure_ascii)


class JsonStream:
    """Re-serializes one JSON value; ``feed`` returns ``(output, consumed)``.

    ``consumed`` is how much of the fed text belongs to the value: all of it until the value
    completes (``done``), then the length up to its last byte; the caller owns the rest.
    ``raw_string``: a top-level string is given as its decoded text (xLAM/Granite 4 keep
    string arguments verbatim). ``strict=False`` allows raw control characters in strings.
    """

    __slots__ = ("ensure_ascii", "strict", "raw_string", "mode", "stack", "keys", "pending", "key", "skip",
                 "broken", "_at")

    def __init__(self, ensure_ascii: bool = False, strict: bool = True, raw_string: bool = False) -> None:
        self.ensure_ascii = ensure_ascii
        self.strict = strict
        self.raw_string = raw_string
        self.mode = VALUE
        self.stack = ""  # the open containers, "{" or "["
        self.keys: list[list[int] | None] = []  # per open container: digests of its keys
        self.pending = ""  # raw text read but not yet decided
        self.key = ""  # the decoded object key being read
        self.skip = -1  # depth of a repeated key whose value is dropped (-1: none)
        self.broken: str | None = None  # the raw text from the byte that broke JSON
        self._at = 0  # start of the step being scanned (where an error points)

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
            return "".join(out), len(text)
        return "".join(out), max(0, i - held)

    def finish(self) -> str:
        """The rest of the output at the end of the text; ``broken`` is set if the value is
        malformed or incomplete (to the held raw text)."""
        if self.broken is not None:
            return ""
        s, self.pending = self.pending, ""
        out: list[str] = []
        try:
            self._scan(s, out, True)
            if self.mode != DONE:
                raise JsonStreamError("unexpected end of JSON text")
        except JsonStreamError:
            self.broken = s[self._at :]
        return "".join(out)

    def _put(self, out: list[str], piece: str) -> None:
        if self.skip < 0:
            out.append(piece)

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
                self._put(out, self._scalar(s[i:j]))
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
                    self.mode, self.key = KEY_STRING, ""
                elif c == "}" and mode == KEY_OR_CLOSE:
                    self._close(out, c)
                else:
                    raise JsonStreamError("object key expected")
                i += 1
            elif mode == COLON:
                if c != ":":
                    raise JsonStreamError("':' expected")
                self._begin_member(out)
                i += 1
            else:  # AFTER
                top = self.stack[-1]
                if c == ",":
                    if top == "[":
                        self._put(out, ", ")
                        self.mode = VALUE
                    else:
                        self.mode = KEY
                elif c == ("}" if top == "{" else "]"):
                    self._close(out, c)
                else:
                    raise JsonStreamError("',' or closing bracket expected")
                i += 1
        return i

    def _value(self, c: str, i: int, out: list[str], may_close: bool) -> int:
        if c == '"':
            self.mode = STRING
            if not (self.raw_string and not self.stack):
                self._put(out, '"')
            return i + 1
        if c in "{[":
            if len(self.stack) >= MAX_DEPTH:
                raise JsonStreamError("nesting too deep")
            self.stack += c
            self.keys.append([] if c == "{" else None)
            self.mode = KEY_OR_CLOSE if c == "{" else VALUE_OR_CLOSE
            self._put(out, c)
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
            else:
                c = s[i]
                if c == '"':
                    i += 1
                    if is_key:
                        self.mode = COLON
                    else:
                        if not raw:
                            self._put(out, '"')
                        self._end_value()
                    return i
                if c != "\\":
                    raise JsonStreamError("control character in string")
                decoded = self._escape(s, i)
                if decoded is None:
                    self.pending = s[i:]
                    return -1
                run, i = decoded
            if is_key:
                self.key += run
                if len(self.key) > MAX_PENDING:
                    raise JsonStreamError("object key too long")
            else:
                self._put(out, run if raw else self._encode(run))
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

    def _begin_member(self, out: list[str]) -> None:
        keys = self.keys[-1]
        digest = key_digest(self.key)
        if digest in keys:
            if self.skip < 0:
                self.skip = len(self.stack)
        else:
            self._put(out, f'{", " if keys else ""}"{self._encode(self.key)}": ')
            if self.skip < 0:
                keys.append(digest)
        self.key = ""
        self.mode = VALUE

    def _close(self, out: list[str], c: str) -> None:
        self._put(out, c)
        self.stack = self.stack[:-1]
        self.keys.pop()
        self._end_value()

    def _end_value(self) -> None:
        if self.skip == len(self.stack):
            self.skip = -1
        self.mode = AFTER if self.stack else DONE

    # ------------------------------------------------------------------------------ state

    def snapshot(self) -> list[Any]:
        return [self.mode, self.stack, self.keys, self.pending, self.key, self.skip]

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, list) or len(snap) != 6:
            raise ValueError("bad JSON stream state")
        mode, stack, keys, pending, key, skip = snap
        if (
            mode not in MODES
            or not isinstance(stack, str)
            or stack.strip("{[")
            or len(stack) > MAX_DEPTH
            or not isinstance(keys, list)
            or len(keys) != len(stack)
            or any((k is None) != (c == "[") for k, c in zip(keys, stack))
            or any(k is not None and not (isinstance(k, list) and all(isinstance(x, int) for x in k)) for k in keys)
            or not isinstance(pending, str)
            or len(pending) > MAX_PENDING
            or not isinstance(key, str)
            or not isinstance(skip, int)
            or not -1 <= skip <= len(stack)
        ):
            raise ValueError("bad JSON stream state")
        self.mode, self.stack, self.keys, self.pending, self.key, self.skip = snap
