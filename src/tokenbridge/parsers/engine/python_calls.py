"""A streaming reader for a Python call list, ``[f(a=1, b="x"), g()]`` (the pythonic families).

Raw text in as the model writes it; out, each call's name as soon as its ``(`` is read, then its
arguments as the exact text of the one-shot path, ``json.dumps({kw: literal}, ensure_ascii=False)``:
strings decoded from Python (quotes, prefixes, escapes, implicit concatenation) and re-escaped as
JSON as they arrive, numbers once complete (``0x10`` is ``16``, ``1e400`` is ``Infinity``),
tuples and sets as lists, ``True``/``None``/``true``/``null`` as JSON literals. What cannot be
decided yet is held back: a token, an escape, a string's closing quote (another string may
follow it), and the first element of ``(…)`` or ``{…}`` (a tuple or a parenthesised value, a
set or a dict).

The accepted text is vLLM's: the ``ast`` of a list of calls with literal keyword arguments,
with its call-list pattern's rules up to the first keyword (no space after ``[`` or inside
``f(a=``, no dotted name, no space before a comma between calls without arguments). Outside it
(positional arguments, comments, backslash continuations, a container as the first element of
``(…)``/``{…}``, a trailing comma after the last call) the reader stops: ``broken`` is the raw
text from the byte it could not take. A repeated dict key is sent again (a last-wins JSON parser
reads the one-shot value); a repeated keyword breaks, as it does in Python.

The state is a parse position (mode, open brackets, a token or escape in progress, the held
first element of an undecided bracket, the current call's keyword names), never the call so far.
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from json.encoder import encode_basestring

from tokenbridge.parsers.base import ParserState, ToolCallDelta
from tokenbridge.parsers.engine.python_literals import EXP_OPEN, NotALiteral, decode_escape, scalar_json, string_prefix

# Where the reader is.
(START, NAME, ARG, KW, EQ, VALUE, ITEM, STRING, STR_END, TOKEN, AFTER, AFTER_CALL, NEXT_CALL, LIST_END, DONE,
 BROKEN) = range(16)

#: Python's parser refuses more than 200 open brackets; held raw text past this is not a token.
MAX_DEPTH = 200
MAX_PENDING = 1 << 14

_WS = re.compile(r"[ \t\n\r\f]*")
_IDENT_CHARS = re.compile(r"\w+")
_NAME_CHARS = re.compile(r"[\w.]+")
_PREFIX_IDENT = re.compile(r"[a-zA-Z]\w*")
_TOKEN_CHARS = re.compile(r"[\w.]+")
_CLOSERS = {"]": "[", ")": "tpC", "}": "dksb"}


class PythonCallsState(ParserState):
    mode: int = START
    stack: str = ""  # L: the call list, C: a call, [: list, t: tuple, s: set, d/k: dict (value/key), p/b: undecided ( {
    pending: str = ""  # raw text not yet decided
    index: int = -1  # the open call's index
    kwargs: list[str] = []  # the open call's keyword names (Python refuses a repeat)
    key: str = ""  # a keyword name read, before its "="
    prefix: bool = True  # before the first keyword: the call-list pattern's rules apply
    comma: bool = False  # a comma read, its ", " not sent (a trailing comma sends none)
    quote: str = ""  # the open string's quote (one or three characters) and flags (r, f)
    flags: str = ""
    sign: str = ""  # unary signs before a number
    held: str = ""  # the output of an undecided bracket's first element
    held_key: str | None = None  # that element as a dict key (None: it cannot be one)
    broken: str | None = None

    def check(self) -> None:
        if len(self.stack) > MAX_DEPTH or self.stack.strip("LC[tsdkpb") or len(self.pending) > MAX_PENDING:
            raise ValueError("bad pythonic call state")


class PythonCallStream:
    """Reads one call list; ``feed(text)`` returns the deltas decided (see the module doc), and
    once the list is closed ``rest`` is the fed text after it. ``pattern``: vLLM's call-list
    pattern applies (pythonic); without it, the list is read as ``ast`` reads it (LFM2), from
    its first non-space character."""

    def __init__(self, pattern: bool = True) -> None:
        self.s = PythonCallsState(prefix=pattern)
        self._out: list[ToolCallDelta] = []
        self._at = 0
        self.rest = ""

    @property
    def done(self) -> bool:
        return self.s.mode == DONE

    @property
    def broken(self) -> str | None:
        return self.s.broken

    def snapshot(self) -> PythonCallsState:
        return self.s

    def load(self, state: PythonCallsState) -> None:
        state.check()
        self.s = state

    def feed(self, text: str) -> list[ToolCallDelta]:
        st = self.s
        if st.mode in (DONE, BROKEN):
            return []
        s, st.pending = st.pending + text, ""
        self._out = []
        try:
            self.rest = s[self._scan(s):]
        except NotALiteral:
            st.mode, st.broken, st.pending = BROKEN, s[self._at :], ""
        if len(st.pending) > MAX_PENDING:
            st.mode, st.broken, st.pending = BROKEN, st.pending, ""
        return self._out

    # ------------------------------------------------------------------------------ output

    def _emit(self, text: str) -> None:
        st = self.s
        if st.stack[-1:] in ("p", "b"):
            st.held += text
        elif self._out and self._out[-1].index == st.index:
            self._out[-1].arguments += text
        else:
            self._out.append(ToolCallDelta(st.index, arguments=text))

    def _sep(self) -> None:
        if self.s.comma:
            self.s.comma = False
            self._emit(", ")

    # ------------------------------------------------------------------------------ scanning

    def _scan(self, s: str) -> int:
        st, i, n = self.s, 0, len(s)
        while i < n:
            self._at = i
            mode = st.mode
            if mode == DONE:
                return i
            if mode == STRING:
                i = self._string(s, i)
            elif mode == TOKEN:
                i = self._token(s, i)
            elif mode in (NAME, KW):
                i = self._name(s, i)
            elif mode == START and not st.prefix:
                i = self._at = _WS.match(s, i).end()
                if i < n:
                    if s[i] != "[":
                        raise _Broken
                    st.stack, st.mode, i = "L", NEXT_CALL, i + 1
            elif mode == START:
                if s[0] != "[":
                    raise _Broken
                if n == 1:
                    i = self._hold(s, 0)
                elif not _PREFIX_IDENT.match(s, 1):  # the pattern wants a name right after "["
                    self._at = 1
                    raise _Broken
                else:
                    st.stack, st.mode, i = "L", NAME, 1
            else:
                if not (st.prefix and mode in (ARG, EQ, AFTER_CALL)):
                    i = self._at = _WS.match(s, i).end()
                if i == n:
                    return n
                i = self._code(s[i], s, i)
            if i < 0:  # the rest is held
                return len(s)
        return n

    def _hold(self, s: str, i: int) -> int:
        self.s.pending = s[i:]
        return -1

    def _code(self, c: str, s: str, i: int) -> int:
        st, mode = self.s, self.s.mode
        if mode == NEXT_CALL:
            if st.prefix and not _PREFIX_IDENT.match(c):
                raise _Broken
            st.mode = NAME
            return i
        if mode == AFTER_CALL:
            if c == ",":
                st.mode = NEXT_CALL
                return i + 1
            if c == "]" or (st.prefix and c in " \t\n\r\f"):  # the pattern: ")" + "," or ")" + space + "]"
                st.mode = LIST_END
                return i
            raise _Broken
        if mode == LIST_END:
            if c != "]":
                raise _Broken
            st.mode, st.stack = DONE, ""
            return i + 1
        if mode == ARG:
            if c == ")":
                return self._close_call(i)
            if not (_PREFIX_IDENT if st.prefix else _IDENT_CHARS).match(c) or c.isdigit():
                raise _Broken
            st.mode = KW
            return i
        if mode == EQ:
            if c != "=":
                raise _Broken
            return self._keyword(i)
        if mode == STR_END:
            return self._string_end(c, s, i)
        if mode in (VALUE, ITEM):
            return self._value(c, s, i)
        return self._after(c, i)  # AFTER

    def _name(self, s: str, i: int) -> int:
        """A call or keyword name; held until the character after it."""
        st = self.s
        m = (_NAME_CHARS if st.mode == NAME else _IDENT_CHARS).match(s, i)
        j = m.end() if m else i
        if j == len(s):
            return self._hold(s, i)
        name = s[i:j]
        if st.mode == KW:
            key = unicodedata.normalize("NFKC", name)
            if not key.isidentifier() or keyword.iskeyword(key) or key in st.kwargs or (st.prefix and s[j] != "="):
                raise _Broken
            st.key, st.mode = key, EQ
            return j
        k = j if st.prefix else _WS.match(s, j).end()
        if k == len(s):
            return self._hold(s, i)
        if s[k] != "(" or len(st.stack) >= MAX_DEPTH:
            raise _Broken
        parts = [unicodedata.normalize("NFKC", p) for p in name.split(".")]
        if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts) or (st.prefix and len(parts) > 1):
            raise _Broken
        st.index += 1
        st.stack, st.mode, st.kwargs = "LC", ARG, []
        self._out.append(ToolCallDelta(st.index, name=".".join(parts), arguments="{"))
        return k + 1

    def _keyword(self, i: int) -> int:
        st = self.s
        self._emit(f'{", " if st.kwargs else ""}{encode_basestring(st.key)}: ')
        st.kwargs.append(st.key)
        st.key, st.prefix, st.comma, st.mode = "", False, False, VALUE
        return i + 1

    def _close_call(self, i: int) -> int:
        st = self.s
        st.comma = False
        self._emit("}")
        st.stack, st.mode, st.kwargs = "L", AFTER_CALL, []
        return i + 1

    def _value(self, c: str, s: str, i: int) -> int:
        st = self.s
        top = st.stack[-1]
        if c in _CLOSERS:
            if st.mode == ITEM and not st.sign and top in _CLOSERS[c]:
                return self._close(c, i)
            raise _Broken
        if c in "-+":
            if top == "k" or len(st.sign) > 16:
                raise _Broken
            st.sign += c
            st.mode = VALUE
            return i + 1
        if c in "'\"":
            return self._open_string(s, i, "")
        if c.isalnum() or c in "._":
            st.mode = TOKEN
            return i
        if c in "[({" and not st.sign and top not in "kpb":
            if len(st.stack) >= MAX_DEPTH:
                raise _Broken
            self._sep()
            st.stack += {"[": "[", "(": "p", "{": "b"}[c]
            if c == "[":
                self._emit("[")
            st.held, st.held_key, st.mode = "", None, ITEM
            return i + 1
        raise _Broken

    def _close(self, c: str, i: int) -> int:
        """A closing bracket where an item may start (an empty bracket, or after a trailing comma)."""
        st = self.s
        top, st.comma = st.stack[-1], False
        if top == "C":
            return self._close_call(i)
        if top == "p":  # ()
            st.stack = st.stack[:-1]
            self._emit("[]")
        elif top == "b":  # {}
            st.stack = st.stack[:-1]
            self._emit("{}")
        else:
            st.stack = st.stack[:-1]
            self._emit("]" if top in "[ts" else "}")
        self._end_value()
        return i + 1

    def _end_value(self) -> None:
        self.s.mode = AFTER

    def _after(self, c: str, i: int) -> int:
        st = self.s
        top = st.stack[-1]
        if top == "C":
            if c == ",":
                st.mode = ARG
                return i + 1
            if c == ")":
                return self._close_call(i)
            raise _Broken
        if top in "pb" and c in ",:)}":
            return self._decide(c, i)
        if c == ":" and top == "k":
            self._emit(": ")
            st.stack, st.mode = st.stack[:-1] + "d", VALUE
            return i + 1
        if c == "," and top != "k":
            st.comma, st.mode = True, ITEM
            if top == "d":
                st.stack = st.stack[:-1] + "k"
            return i + 1
        if c in _CLOSERS and top in _CLOSERS[c] and top != "k":
            return self._close(c, i)
        raise _Broken

    def _decide(self, c: str, i: int) -> int:
        """The first element of ``(…)`` or ``{…}`` is read: what the bracket is, from ``c``."""
        st = self.s
        top, held, key = st.stack[-1], st.held, st.held_key
        st.held, st.held_key = "", None
        st.stack = st.stack[:-1]
        if top == "p" and c == ")":
            self._emit(held)  # a parenthesised value
            self._end_value()
        elif c == "," and top in "pb":
            st.stack += "t" if top == "p" else "s"
            self._emit("[" + held)
            st.comma, st.mode = True, ITEM
        elif top == "b" and c == "}":
            self._emit("[" + held + "]")
            self._end_value()
        elif top == "b" and c == ":" and key is not None:
            st.stack += "d"
            self._emit("{" + key + ": ")
            st.mode = VALUE
        else:
            raise _Broken
        return i + 1

    # ------------------------------------------------------------------------------ scalars

    def _token(self, s: str, i: int) -> int:
        """A number or name, held until the character after it (``1e-5`` reads its sign)."""
        st = self.s
        j = i
        while True:
            m = _TOKEN_CHARS.match(s, j)
            j = m.end() if m else j
            if j < len(s) and s[j] in "+-" and EXP_OPEN.fullmatch(s, i, j):
                j += 1
                continue
            break
        if j == len(s):
            return self._hold(s, i)
        token, c = s[i:j], s[j]
        if c in "'\"" and not st.sign:
            flags = string_prefix(token)
            if flags is None:
                raise _Broken
            return self._open_string(s, j, flags, token_at=i)
        top = st.stack[-1]
        value, key = scalar_json(token, st.sign)
        st.sign = ""
        if top == "k":
            if key is None:
                raise _Broken
            value = key
        elif top == "b":
            st.held_key = key
        self._sep()
        self._emit(value)
        self._end_value()
        return j

    # ------------------------------------------------------------------------------ strings

    def _open_string(self, s: str, i: int, flags: str, token_at: int | None = None) -> int:
        """A string's opening quote at ``i`` (one or three): held until three characters show which."""
        st = self.s
        q = s[i]
        if len(s) - i < 3 and s[i : i + 2] in (q, q + q):
            return self._hold(s, i if token_at is None else token_at)
        if st.sign:
            raise _Broken
        if st.mode != STR_END:
            self._sep()
            self._emit('"')
        elif "F" in st.flags:
            flags += "F"
        if "f" in flags:  # "F": a part of the string is an f-string (no dict key, as in the one-shot path)
            flags += "F"
        triple = s[i : i + 3] == q * 3
        st.quote, st.flags, st.mode = q * 3 if triple else q, flags, STRING
        return i + (3 if triple else 1)

    def _string(self, s: str, i: int) -> int:
        st = self.s
        q, raw, fstr = st.quote, "r" in st.flags, "f" in st.flags
        n = len(s)
        specials = "\\\r" + q[0] + ("{}" if fstr else "") + ("" if len(q) == 3 else "\n")
        run = []
        while i < n:
            self._at = i
            j = i
            while j < n and s[j] not in specials:
                j += 1
            if j > i:
                run.append(s[i:j])
                i = j
                continue
            c = s[i]
            if c == q[0]:
                if len(q) == 1:
                    i += 1
                    st.mode = STR_END
                    break
                if n - i < 3 and s[i:] == q[0] * (n - i):
                    self._flush(run)
                    return self._hold(s, i)
                if s[i : i + 3] == q:
                    i += 3
                    st.mode = STR_END
                    break
                run.append(c)
                i += 1
            elif c == "\n":
                raise _Broken
            elif c == "\r":
                if i + 1 == n:
                    self._flush(run)
                    return self._hold(s, i)
                if len(q) == 1:
                    raise _Broken
                run.append("\n")
                i += 2 if s[i + 1] == "\n" else 1
            elif c in "{}":
                if i + 1 == n:
                    self._flush(run)
                    return self._hold(s, i)
                if s[i + 1] != c:
                    raise _Broken
                run.append(c)
                i += 2
            else:  # a backslash
                decoded = decode_escape(s, i, raw)
                if decoded is None:
                    self._flush(run)
                    return self._hold(s, i)
                text, i = decoded
                run.append(text)
        self._flush(run)
        return i

    def _flush(self, run: list[str]) -> None:
        if run:
            self._emit(encode_basestring("".join(run))[1:-1])
            run.clear()

    def _string_end(self, c: str, s: str, i: int) -> int:
        """After a string: another string literal continues it; anything else closes it."""
        st = self.s
        if c in "'\"":
            return self._open_string(s, i, "")
        if c.isalpha():
            m = _IDENT_CHARS.match(s, i)
            if m.end() == len(s):
                return self._hold(s, i)
            flags = string_prefix(m.group())
            if flags is None or s[m.end()] not in "'\"":
                raise _Broken
            return self._open_string(s, m.end(), flags, token_at=i)
        top = st.stack[-1]
        if top == "k" and "F" in st.flags:
            raise _Broken
        self._emit('"')
        if top == "b":
            st.held_key = None if "F" in st.flags else st.held
        st.mode = AFTER
        return i


class _Broken(NotALiteral):
    """The text left the accepted grammar at ``_at``."""
