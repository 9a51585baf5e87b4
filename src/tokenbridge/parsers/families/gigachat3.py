"""GigaChat 3 JSON tool calls: one ``{"name", "arguments"}`` object after ``function call<|role_sep|>``.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.json_calls import CallObject, CallObjectState, OpenCall
from tokenbridge.parsers.engine.json_stream import JsonStream
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix
from tokenbridge.parsers.registry import tool_parser


GIGACHAT_MARKERS = ("<|message_sep|>", "<|function_call|>", "function call<|role_sep|>\n")
_GIGACHAT_CALL = re.compile(r"(?:function call<\|role_sep\|>\n|<\|function_call\|>)(.*)", re.S)
_GIGACHAT_CONTENT = re.compile(r"^(.*?)(?:<\|message_sep\|>|<\|function_call\|>)", re.S)


def extract_gigachat3(text: str, ctx: ParseContext) -> Extraction:
    """GigaChat 3: after ``function call<|role_sep|>\\n`` (or ``<|function_call|>``) the rest of
    the output (minus a final ``</s>``) is one ``{"name", "arguments": {…}}`` object. Content
    is the text before the first ``<|message_sep|>``/``<|function_call|>``.

    A non-string name fails the request in vLLM; it is kept as content here.
    """
    body = text[: text.rfind("</s>")] if text.rstrip().endswith("</s>") else text
    m = _GIGACHAT_CALL.search(body)
    if m is None:
        return as_content(text)
    try:
        obj = json.loads(m.group(1), strict=False)
    except json.JSONDecodeError:
        return as_content(text)
    if not (isinstance(obj, dict) and "name" in obj and isinstance(obj.get("arguments"), dict)):
        return as_content(text)
    if not isinstance(obj["name"], str):
        return as_content(text)
    c = _GIGACHAT_CONTENT.search(body)
    content = c.group(1) if c else body
    return Extraction(content or None, [(obj["name"], dumps_args(obj["arguments"]))])


Gigachat3ToolParser = tool_parser("gigachat3", family="gigachat3")(
    held_calls_parser(JsonFamily("gigachat3", extract_gigachat3, GIGACHAT_MARKERS))
)


# Where the incremental parser is: streaming content, holding the text after a separator,
# reading the call object, reading what follows it, or passing everything on as content.
TEXT, HELD, CALL, TAIL, CONTENT = range(5)
SEP, CALL_MARK, ROLE_CALL = GIGACHAT_MARKERS
EOS = "</s>"
JSON_BLANK = " \t\n\r"


class Gigachat3StreamedState(ParserState):
    where: int = TEXT
    buf: str = ""  # TEXT: a partial marker; HELD: the text from the separator; TAIL: what follows the object
    raw: str = ""  # the call's text while it has no name (content if it never gets one)
    echo: str | None = None  # echo mode (see the class): the echoed text held back; None: not echoing
    echo_open: bool = False  # the echo has not reached a separator yet
    call: CallObjectState | None = None

    def check(self) -> None:
        if (self.call is None) != (self.where != CALL):
            raise ValueError("bad tool parser state: a call is open exactly in CALL")


class _LaxCallObject(CallObject):
    """A call object read as ``json.loads(..., strict=False)`` reads it (raw control
    characters in strings)."""

    def _stream(self, member: int) -> JsonStream:
        return JsonStream(self.ensure_ascii, strict=False)


class Gigachat3StreamedCalls(OpenCall, ToolParser):
    """``gigachat3`` for ``--tool-call-streaming incremental``: content streams up to the first
    ``<|message_sep|>``/``<|function_call|>``; the text from a separator to the call marker is
    held (it is content only if no call follows); then the call object opens when its name
    closes and its arguments stream re-serialized. After the object only blank text and one
    ``</s>`` may follow.

    Echo mode: a ``function call<|role_sep|>`` marker with no separator before it leaves vLLM's
    content the text up to the first separator (the call included), less a final ``</s>``; the
    stream echoes that text as content as it reads the call, and then the content is the echo
    alone, whatever happens to the call.

    Malformed or truncated output: a call not named yet leaves its text, from the separator
    or marker, content; a named call stands, and the text from the byte that breaks the object
    (after it: from the first non-blank character that is not one final ``</s>``) is content.
    """

    name = "gigachat3"
    streams_arguments = True
    State = Gigachat3StreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(Gigachat3StreamedState())

    def _new_call(self) -> CallObject:
        return _LaxCallObject(False, ("arguments",), stop_at_close=True, args_first="{")

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if self.echo is not None:
            self._echo(text, out)
        self._run(text, out)
        return out

    def _content(self, out: Delta, text: str) -> None:
        if self.echo is None:
            out.content += text

    def _run(self, text: str, out: Delta) -> None:
        while True:
            where = self.where
            if where == TEXT:
                buf = self.buf + text
                pos, marker = find_first(buf, GIGACHAT_MARKERS)
                if marker is None:
                    keep = partial_suffix(buf, GIGACHAT_MARKERS)
                    out.content += buf[: len(buf) - keep]
                    self.buf = buf[len(buf) - keep :]
                    return
                self.buf, text = "", buf[pos:]
                if marker == SEP:
                    out.content += buf[:pos]
                    self.where = HELD
                    continue
                text = buf[pos + len(marker) :]
                if marker == CALL_MARK:
                    out.content += buf[:pos]
                    self.raw = marker
                else:
                    out.content += buf[: pos + len(marker)]
                    self.echo, self.echo_open = "", True
                    self._echo(text, out)
                self._open_call()
                continue
            if where == HELD:
                buf = self.buf + text
                pos, marker = find_first(buf, (ROLE_CALL, CALL_MARK))
                if marker is None:
                    self.buf = buf
                    return
                self.raw, self.buf, text = buf[: pos + len(marker)], "", buf[pos + len(marker) :]
                self._open_call()
                continue
            if where == CALL:
                text = self._read_call(text, out)
                if self.where != TAIL:
                    return
                continue
            if where == TAIL:
                self._tail(text, out)
            else:
                self._content(out, text)
            return

    def _open_call(self) -> None:
        self.where, self._call = CALL, self._new_call()

    def _read_call(self, text: str, out: Delta) -> str:
        """Feeds the call; returns the text after its object (once it closes)."""
        call = self._call
        name, args, used = call.feed(text)
        if not call.named and name is None and self.echo is None:
            self.raw += text[:used]
        if name is not None:
            out.tool_calls.append(ToolCallDelta(0, name=name, arguments=args))
            self.raw = ""
        elif args:
            out.tool_calls.append(ToolCallDelta(0, arguments=args))
        if call.broken is not None:
            self._content(out, call.broken if call.named else self.raw)
            self.where, self._call, self.raw = CONTENT, None, ""
        elif call.complete:
            self.where, self._call = TAIL, None
        return text[used:]

    def _tail(self, text: str, out: Delta) -> None:
        """Blank text, one ``</s>`` and blank text (as vLLM cuts a final ``</s>``) may follow."""
        tail = (self.buf + text).lstrip(JSON_BLANK)
        if (not tail or EOS.startswith(tail)
                or (tail.startswith(EOS) and not tail[len(EOS) :].strip())):
            self.buf = tail
            return
        self.buf, self.where = "", CONTENT
        self._content(out, tail)

    def _echo(self, text: str, out: Delta) -> None:
        """The echo mode's content: the text up to the first separator, less a final ``</s>``
        (held with the blank text after it)."""
        if not self.echo_open:
            return
        buf = self.echo + text
        pos, _ = find_first(buf, (SEP, CALL_MARK))
        if pos != -1:
            out.content += buf[:pos]
            self.echo, self.echo_open = "", False
            return
        eos = buf.rfind(EOS)
        keep = (len(buf) - eos if eos != -1 and not buf[eos + len(EOS) :].strip()
                else partial_suffix(buf, (SEP, CALL_MARK, EOS)))
        out.content += buf[: len(buf) - keep]
        self.echo = buf[len(buf) - keep :]

    def finish(self) -> Delta:
        out = Delta()
        if self.echo is not None:
            if self.echo_open and not self.echo.startswith(EOS):
                out.content += self.echo
            self.echo_open = False
        where = self.where
        if where in (TEXT, HELD):
            out.content += self.buf
        elif where == CALL and not self._call.named:
            self._content(out, self.raw)
        elif where == TAIL and not self.buf.startswith(EOS):
            self._content(out, self.buf)
        self.where, self.buf, self.raw, self._call = CONTENT, "", "", None
        return out


Gigachat3ToolParser.incremental = Gigachat3StreamedCalls
