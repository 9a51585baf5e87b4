"""FunctionGemma ``<start_function_call>call:name{key:<escape>value<escape>,…}<end_function_call>``,
as vLLM 0.33 reads it (non-streaming).

A call without its end marker runs to the end of the text. Each ``key:<escape>…<escape>``
value is JSON when it parses, else the raw string. With calls, content is the stripped text
before the first start marker (null when the output starts with it). Held until ``finish()``.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring

from tokenbridge.parsers.base import Delta, ParseContext, ParserState
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.arguments import StreamedArguments
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, as_content
from tokenbridge.parsers.engine.lexer import partial_suffix

START = "<start_function_call>"
_CALL = re.compile(
    r"<start_function_call>call:(\w+)\{(.*?)\}<end_function_call>"
    r"|<start_function_call>call:(\w+)\{(.*)",
    re.S,
)
_ARG = re.compile(r"(\w+):<escape>(.*?)<escape>", re.S)


def parse_value(value: str) -> object:
    """A value as vLLM reads it: JSON when it parses, else the raw string."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def parse_args(raw: str) -> dict:
    return {key: parse_value(value) for key, value in _ARG.findall(raw)}


def extract_functiongemma(text: str, ctx: ParseContext) -> Extraction:
    if START not in text:
        return as_content(text)
    calls = [
        (closed_name or open_name, dumps_args(parse_args(closed_args or open_args)))
        for closed_name, closed_args, open_name, open_args in _CALL.findall(text)
    ]
    if not calls:
        return as_content(text)
    at = text.find(START)
    return Extraction(text[:at].strip() or None if at > 0 else None, calls)


@tool_parser("functiongemma", family="functiongemma")
class FunctionGemmaToolParser(HeldCallsParser):
    """vLLM's ``functiongemma`` tool-call format."""

    family = JsonFamily("functiongemma", extract_functiongemma)


# Where the incremental parser is.
BEFORE, HEAD, ARGS, VALUE, BETWEEN = range(5)
_ESCAPE, _END = "<escape>", "}<end_function_call>"
_KEY_OPEN = ":" + _ESCAPE
_HEAD = re.compile(r"call:(\w+)\{")
_HEAD_PREFIX = re.compile(r"c(?:a(?:l(?:l(?::\w*)?)?)?)?")
_TRAILING_WORD = re.compile(r"\w*$")
_JSON_WS = " \t\n\r"
_JSON_STARTS = frozenset('{["-0123456789')
_JSON_WORDS = ("true", "false", "null", "NaN", "Infinity")


def value_is_text(value: str) -> bool | None:
    """True when ``json.loads`` fails on ``value`` whatever follows it (it stays a string);
    None while it may still be JSON."""
    s = value.lstrip(_JSON_WS)
    if not s or s[0] in _JSON_STARTS:
        return None
    for word in _JSON_WORDS:
        if word.startswith(s):
            return None
        if s.startswith(word):
            return True if s[len(word):].strip(_JSON_WS) else None
    return True


class FunctionGemmaStreamedState(ParserState):
    where: int = BEFORE
    held: str = ""  # the output before the first call (all of it is content if none opens)
    cut: int = -1  # where the first start marker is in it (the content, stripped, ends there)
    buf: str = ""  # undecided text: a partial marker, a key, a call's head
    index: int = -1  # the open call's index
    members: int = 0  # its arguments sent
    key: str = ""  # the value's key
    value: str = ""  # a value that may be JSON, held to its end
    streaming: bool = False  # the value is text and streams


class FunctionGemmaStreamedCalls(StreamedArguments):
    """``functiongemma`` for ``--tool-call-streaming incremental``: a call opens when its
    ``call:NAME{`` is read; each ``key:<escape>…<escape>`` follows when its key is read, a value
    that cannot be JSON streaming as text, one that may be held to its end and sent as the
    one-shot answer reads it. Text before the first call is held (as in ``whole`` mode) and sent
    stripped when it opens; a call's body runs to its first ``}<end_function_call>`` (or the
    output's end), as the one-shot pattern reads it.

    The documented answer where the stream cannot take back what it sent: a value cut by the
    call's end or the output's end is closed (the one-shot answer drops it); a repeated key is
    sent again (a last-wins JSON parser reads the one-shot value).
    """

    name = "functiongemma"
    State = FunctionGemmaStreamedState
    _is_text = staticmethod(value_is_text)

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(FunctionGemmaStreamedState())

    def _step(self, buf: str, out: Delta) -> str:
        """Reads from ``buf`` in the current place; returns the rest (held text goes to ``buf``)."""
        where = self.where
        if where in (BEFORE, BETWEEN):
            at = buf.find(START)
            if at < 0:
                keep = partial_suffix(buf, (START,))
                if where == BEFORE:
                    self.held += buf[: len(buf) - keep]
                self.buf = buf[len(buf) - keep:]
                return ""
            if where == BEFORE:
                self.held += buf[:at]
                self.cut = len(self.held) if self.cut < 0 else self.cut
            self.where = HEAD
            return buf[at + len(START):]
        if where == HEAD:
            m = _HEAD.match(buf)
            if m is None:
                if _HEAD_PREFIX.fullmatch(buf):
                    self.buf = buf
                    return ""
                if self.index < 0:
                    self.held += START
                self.where = BEFORE if self.index < 0 else BETWEEN
                return buf
            if self.index < 0:
                out.content, self.held = self.held[: self.cut].strip(), ""
            self.where = ARGS
            self._open_call(m.group(1), out)
            return buf[m.end():]
        if where == ARGS:
            key_at, end_at = buf.find(_KEY_OPEN), buf.find(_END)
            if end_at >= 0 and (key_at < 0 or end_at < key_at):
                self._end_call(out)
                return buf[end_at + len(_END):]
            if key_at < 0:
                keep = partial_suffix(buf, (_KEY_OPEN, _END))
                word = _TRAILING_WORD.search(buf, 0, len(buf) - keep)
                self.buf = buf[word.start():]
                return ""
            key = _TRAILING_WORD.search(buf, 0, key_at).group()
            if not key:  # no key: the pattern reads on from the next character
                return buf[key_at + 1:]
            self.where = VALUE
            self._begin_value(key, False, out)
            return buf[key_at + len(_KEY_OPEN):]
        # VALUE
        close_at, end_at = buf.find(_ESCAPE), buf.find(_END)
        if end_at >= 0 and (close_at < 0 or end_at < close_at):
            self._value_text(buf[:end_at], out)
            self._end_call(out)
            return buf[end_at + len(_END):]
        if close_at < 0:
            keep = partial_suffix(buf, (_ESCAPE, _END))
            self._value_text(buf[: len(buf) - keep], out)
            self.buf = buf[len(buf) - keep:]
            return ""
        self._value_text(buf[:close_at], out)
        self._end_value(out)
        self.where = ARGS
        return buf[close_at + len(_ESCAPE):]

    def _converted(self, raw: str) -> str:
        return dumps_args(parse_value(raw))

    def _end_call(self, out: Delta) -> None:
        """The call's body ended: a value still open is closed if it streams, else dropped."""
        self._close_call(self.where == VALUE, out)
        self.where = BETWEEN

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == BEFORE or (self.where == HEAD and self.index < 0):
            out.content = self.held + (START if self.where == HEAD else "") + self.buf
        elif self.where in (ARGS, VALUE):
            if self.where == VALUE and self.buf and self.streaming:
                self._send(encode_basestring(self.buf)[1:-1], out)
            self._end_call(out)
        self.where, self.held, self.buf = BETWEEN, "", ""
        return out


FunctionGemmaToolParser.incremental = FunctionGemmaStreamedCalls
