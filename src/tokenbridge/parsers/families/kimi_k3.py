"""Moonshot Kimi K3: XTML channels (``<|open|>``, ``<|close|>``, ``<|sep|>``) for reasoning, response and tools.

Tool calls, for example:
    Hi<|close|>response<|sep|><|open|>tools<|sep|>
    <|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>東京<|close|>argument<|sep|>
    <|open|>argument key="days" type="integer"<|sep|>3<|close|>argument<|sep|>
    <|close|>call<|sep|><|close|>tools<|sep|>

vLLM 0.33 reads the whole output with regexes. The calls are the ``call`` blocks between the
first ``tools`` open and the next ``tools`` close (or the end); a ``string`` argument is its
raw text, any other type is JSON when it parses, and attribute values are unescaped
(``&quot;``, ``&amp;``). A call block without a ``tool`` name is dropped. The content is the
body of the first complete ``response`` block anywhere in the output; without one it is the
text before the tools channel, from a ``response`` open on (if any), with ``response`` and
``message`` close markers removed. A ``response`` block can come last, so content is held
until one completes or the output ends; each call is emitted when its block closes.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Annotated, Any, ClassVar, NamedTuple

import msgspec

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.thinking import KIMI_K3
from tokenbridge.parsers.engine.held import WholeTextParser
from tokenbridge.parsers.engine.lexer import partial_suffix

_O, _C, _S = re.escape("<|open|>"), re.escape("<|close|>"), re.escape("<|sep|>")


def _tag(opener: str, name: str) -> re.Pattern[str]:
    """A channel marker; whitespace inside it is tolerated as in vLLM."""
    return re.compile(rf"{opener}\s*{name}\s*{_S}")


TOOLS_OPEN, TOOLS_CLOSE = _tag(_O, "tools"), _tag(_C, "tools")
RESPONSE_OPEN, RESPONSE_CLOSE = _tag(_O, "response"), _tag(_C, "response")
MESSAGE_CLOSE = _tag(_C, "message")
RESPONSE = re.compile(rf"{_O}\s*response\s*{_S}(?P<c>.*?){_C}\s*response\s*{_S}", re.DOTALL)
# An element: its attributes run to the first separator, its body to its first close.
CALL = re.compile(
    rf"{_O}\s*call\s+(?P<attrs>(?:(?!{_S}).)*?){_S}(?P<body>.*?){_C}\s*call\s*{_S}", re.DOTALL
)
ARGUMENT = re.compile(
    rf"{_O}\s*argument\s+(?P<attrs>(?:(?!{_S}).)*?){_S}(?P<val>.*?){_C}\s*argument\s*{_S}",
    re.DOTALL,
)
ATTR = re.compile(r'(?P<k>\w+)="(?P<v>[^"]*)"')


def attributes(text: str) -> dict[str, str]:
    return {
        m["k"]: m["v"].replace("&quot;", '"').replace("&amp;", "&") for m in ATTR.finditer(text)
    }


def decode_call(attrs: str, body: str) -> tuple[str, str] | None:
    """``(name, arguments)`` of one call block, or None when it names no tool."""
    name = attributes(attrs).get("tool", "")
    args: dict[str, Any] = {}
    for m in ARGUMENT.finditer(body):
        a = attributes(m["attrs"])
        key, raw = a.get("key", ""), m["val"]
        if a.get("type", "string") == "string":
            args[key] = raw
            continue
        try:
            args[key] = json.loads(raw)
        except ValueError:
            args[key] = raw
    return (name, json.dumps(args, ensure_ascii=False)) if name else None


def fallback_content(before: str) -> str:
    """Content without a complete response block: the text before the tools channel,
    unwrapped from a response open, without close markers."""
    m_open = RESPONSE_OPEN.search(before)
    if m_open is not None:
        m_close = RESPONSE_CLOSE.search(before, m_open.end())
        before = before[m_open.end(): m_close.start() if m_close else len(before)]
    else:
        before = RESPONSE_CLOSE.sub("", before)
    return MESSAGE_CLOSE.sub("", before)


class KimiK3State(ParserState):
    _buf: str
    _content_done: bool
    _in_section: bool
    _section_closed: bool
    _matched: Annotated[int, msgspec.Meta(ge=0)]
    _index: Annotated[int, msgspec.Meta(ge=0)]

class KimiK3ToolParser(ToolParser):
    """Holds the output until its content is decided; emits each call block when it closes.

    ``engine_based``: vLLM's ``KimiK3Parser`` runs this parser under ``tool_choice="none"``
    too (content unwrapped, calls dropped), as it does for engine-based families. Named and
    required choices fall back to it (``supports_required_and_named`` is False in vLLM).
    """

    State = KimiK3State

    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        # While the content is undecided ``_buf`` is the whole output; after that, only the
        # unread rest of the tools channel (``_in_section``), or nothing once it closed.
        self._buf = ""
        self._content_done = False
        self._in_section = False
        self._section_closed = False
        self._matched = 0  # call blocks read so far (named or not)
        self._index = 0  # calls emitted

    def _section(self) -> tuple[str, bool] | None:
        """The tools channel text seen so far, and whether it is closed."""
        if self._in_section:
            start = 0
        else:
            m = TOOLS_OPEN.search(self._buf)
            if m is None:
                return None
            start = m.end()
        close = TOOLS_CLOSE.search(self._buf, start)
        return self._buf[start: close.start() if close else len(self._buf)], close is not None

    def _read_calls(self, out: Delta) -> None:
        found = self._section()
        if found is None:
            return
        section, closed = found
        end = 0
        for n, m in enumerate(CALL.finditer(section)):
            end = m.end()
            if n < self._matched:
                continue
            self._matched = n + 1
            call = decode_call(m["attrs"], m["body"])
            if call is not None:
                out.tool_calls.append(ToolCallDelta(index=self._index, name=call[0], arguments=call[1]))
                self._index += 1
        if self._content_done:
            # Only what later call blocks can still use is kept (the scan resumes at ``end``).
            self._in_section, self._section_closed = not closed, closed
            self._buf = "" if closed else section[end:]
            self._matched = 0

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if self._section_closed or not text:
            return out
        self._buf += text
        if ">" not in text:  # every marker ends with "<|sep|>": nothing new can complete
            return out
        if not self._content_done:
            m = RESPONSE.search(self._buf)
            if m is not None:
                out.content = m["c"]
                self._content_done = True
        self._read_calls(out)
        return out

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        if not self._content_done:
            m = TOOLS_OPEN.search(self._buf)
            out.content = fallback_content(self._buf[: m.start()] if m else self._buf)
            self._content_done = True
        if not self._section_closed:
            self._read_calls(out)
        self._buf, self._section_closed = "", True
        return out

def _cut(word: str) -> str:
    """``word`` cut anywhere before its end, as a regex alternation (the empty cut included)."""
    return "|".join(re.escape(word[:k]) for k in range(len(word)))


def _element(word: str, attrs: bool) -> str:
    """The rest of a marker after its ``<|open|>``/``<|close|>``: ``word<|sep|>``, or with
    ``attrs`` ``word attributes<|sep|>`` (whitespace as vLLM tolerates it)."""
    if attrs:
        return rf"\s*{word}\s+(?P<attrs>(?:(?!{_S}).)*?){_S}"
    return rf"\s*{word}\s*{_S}"


def _cut_element(word: str, attrs: bool) -> str:
    """``_element`` cut anywhere (a marker the next chunk may complete)."""
    if attrs:
        return rf"\s*(?:{_cut(word)}|{word}(?:\s(?:(?!{_S}).)*)?)\Z"
    return rf"\s*(?:{_cut(word)}|{word}\s*(?:{_cut('<|sep|>')}))\Z"


class _Markers(NamedTuple):
    """What a reader state looks for next (one alternative per marker, named), a marker that
    may be cut at the end of the text, and the block ends that cut a header short."""

    next: re.Pattern[str]
    cut: re.Pattern[str]
    ends: re.Pattern[str] | None


def _markers(opens: tuple[str, ...], closes: tuple[str, ...]) -> _Markers:
    """``opens`` (with attributes) after ``<|open|>``, ``closes`` after ``<|close|>``."""
    found = [f"(?P<{w}>{_O}{_element(w, True)})" for w in opens]
    ends = [f"(?P<end_{w}>{_C}{_element(w, False)})" for w in closes]
    cut = [f"{_O}{_cut_element(w, True)}" for w in opens] + [f"{_C}{_cut_element(w, False)}" for w in closes]
    # A header's block ends there: the channel's for a call, the call's (or channel's) for an argument.
    cuts_header = [e for e in ends if "end_argument" not in e]
    return _Markers(re.compile("|".join(found + ends), re.DOTALL), re.compile("|".join(cut), re.DOTALL),
                    re.compile("|".join(cuts_header), re.DOTALL) if opens else None)


SECTION, BODY, VALUE, SKIP, DONE = range(5)
_READING = {
    SECTION: _markers(("call",), ("tools",)),
    BODY: _markers(("argument",), ("call", "tools")),
    VALUE: _markers((), ("argument", "call", "tools")),
    SKIP: _markers((), ("call", "tools")),
}
_RESPONSE_CUT = re.compile(_O + _cut_element("response", False))
_TAG_STARTS = ("<|open|>", "<|close|>")


class KimiK3StreamedState(ParserState):
    _before: str  # the text before the tools channel (all of it until the channel opens)
    _scan: str  # text from the first ``response`` open on, while the content is undecided
    _tail: str  # what may be a cut ``response`` open, while none is found
    _content_done: bool
    _open: bool  # the tools channel opened
    _where: Annotated[int, msgspec.Meta(ge=SECTION, le=DONE)]
    _rest: str  # channel text not read yet: a marker the next chunk may complete
    _index: Annotated[int, msgspec.Meta(ge=0)]  # calls opened
    _key: str
    _string: bool  # the open argument is a ``string`` (streamed) one
    _held: str  # a held argument's text
    _members: Annotated[int, msgspec.Meta(ge=0)]


class KimiK3StreamedCalls(ToolParser):
    """``--tool-call-streaming incremental``: a call opens when its ``call`` header is read (a
    header without a ``tool`` name is skipped, as the one-shot answer drops it), each argument
    when its header is; a ``string`` argument streams as written, any other is held to its end
    and sent as JSON when it parses, else as its text. The state is a parse position: the
    content (see the module docstring) needs the text before the tools channel, and the text
    from a ``response`` open on while no block completed, never the calls.

    Malformed output, the documented answer: a call or argument whose block does not close (a
    length cut, the channel's end) stands, closed (the one-shot answer drops it); a repeated
    argument key is sent again (the one-shot answer keeps the last value at the first one's
    place).
    """

    State = KimiK3StreamedState
    streams_arguments = True
    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._before = self._scan = self._tail = self._rest = self._key = self._held = ""
        self._content_done = self._open = self._string = False
        self._where, self._index, self._members = SECTION, 0, 0

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if not text:
            return out
        if self._open:
            self._content(text, out)
            self._read(text, out)
            return out
        self._before += text
        if not self._content_done:
            m = RESPONSE.search(self._before)
            if m is not None:
                out.content, self._content_done = m["c"], True
        m = TOOLS_OPEN.search(self._before)
        if m is not None:
            seen, self._before, self._open = self._before, self._before[: m.start()], True
            if self._content_done:
                self._before = ""
            else:
                self._content(seen, out, fresh=True)
            self._read(seen[m.end():], out)
        return out

    def _content(self, text: str, out: Delta, fresh: bool = False) -> None:
        """The undecided content, after the tools channel opened: the first complete response
        block (from the first open on), or the fallback at the end."""
        if self._content_done:
            return
        if not self._scan:
            seen = text if fresh else self._tail + text
            m = RESPONSE_OPEN.search(seen)
            if m is None:
                cut = _RESPONSE_CUT.search(seen)
                self._tail = seen[cut.start():] if cut else seen[len(seen) - partial_suffix(seen, _TAG_STARTS[:1]):]
                return
            self._tail, self._scan = "", seen[m.start():]
        else:
            self._scan += text
        m = RESPONSE.search(self._scan)
        if m is not None:
            out.content, self._content_done, self._scan, self._before = m["c"], True, "", ""

    def _send(self, text: str, out: Delta) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(index=self._index - 1, arguments=text))

    def _read(self, text: str, out: Delta) -> None:
        buf, i = self._rest + text, 0
        self._rest = ""
        while self._where != DONE:
            reading = _READING[self._where]
            m = reading.next.search(buf, i)
            if m is not None and m.lastgroup in ("call", "argument"):
                m = reading.ends.search(buf, m.start(), m.end()) or m  # a header cut by its block's end
            if m is None:
                cut = reading.cut.search(buf, i)
                hold = min(cut.start() if cut else len(buf), len(buf) - partial_suffix(buf[i:], _TAG_STARTS))
                if self._where == VALUE:
                    self._value(buf[i:hold], out)
                self._rest = buf[hold:]
                return
            if self._where == VALUE:
                self._value(buf[i:m.start()], out)
            self._marker(m, out)
            i = m.end()

    def _marker(self, m: re.Match[str], out: Delta) -> None:
        kind = m.lastgroup
        if kind == "call":
            name = attributes(m["attrs"]).get("tool", "")
            self._where = BODY if name else SKIP
            if name:
                self._index += 1
                self._members = 0
                out.tool_calls.append(ToolCallDelta(index=self._index - 1, name=name, arguments="{"))
        elif kind == "argument":
            a = attributes(m["attrs"])
            self._key, self._string, self._held = a.get("key", ""), a.get("type", "string") == "string", ""
            self._where = VALUE
            if self._string:
                self._send(f'{", " if self._members else ""}{encode_basestring(self._key)}: "', out)
                self._members += 1
        elif kind == "end_argument":
            self._end_value(out)
            self._where = BODY
        else:
            self._end_call(out)
            self._where = DONE if kind == "end_tools" else SECTION

    def _value(self, text: str, out: Delta) -> None:
        if self._string:
            self._send(encode_basestring(text)[1:-1] if text else "", out)
        else:
            self._held += text

    def _end_value(self, out: Delta) -> None:
        if self._string:
            self._send('"', out)
            return
        try:
            value = json.loads(self._held)
        except ValueError:
            value = self._held
        self._send(f'{", " if self._members else ""}{encode_basestring(self._key)}: '
                   f"{json.dumps(value, ensure_ascii=False)}", out)
        self._members += 1
        self._held = ""

    def _end_call(self, out: Delta) -> None:
        """A call left open (by the channel's end or the output's) is closed: an open string
        argument with it, a held one dropped."""
        if self._where == VALUE and self._string:
            self._send('"', out)
        if self._where in (BODY, VALUE):
            self._send("}", out)
        self._held = ""

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        if not self._content_done:
            m = RESPONSE.search(self._scan)
            out.content = m["c"] if m else fallback_content(self._before)
            self._content_done = True
        self._end_call(out)
        self._where, self._rest, self._before, self._scan, self._tail = DONE, "", "", "", ""
        return out


tool_parser("kimi_k3", family="kimi_k3")(KimiK3ToolParser)
KimiK3ToolParser.name = "kimi_k3"
KimiK3ToolParser.incremental = KimiK3StreamedCalls
KimiK3StreamedCalls.name = "kimi_k3"


def _xtml(kind: str, name: str) -> re.Pattern[str]:
    """``<|open|>name<|sep|>`` (or ``close``), tolerating spaces around the name."""
    return re.compile(rf"<\|{kind}\|>\s*{name}\s*<\|sep\|>")


_K3_THINK_OPEN, _K3_THINK_CLOSE = _xtml("open", "think"), _xtml("close", "think")


_K3_RESPONSE_OPEN, _K3_RESPONSE_CLOSE = _xtml("open", "response"), _xtml("close", "response")


_K3_MESSAGE_CLOSE = _xtml("close", "message")


_K3_THINK_MARKERS = ("<|open|>think<|sep|>", "<|close|>think<|sep|>")


@reasoning_parser("kimi_k3", family="kimi_k3")
class KimiK3ReasoningParser(WholeTextParser):
    """Kimi K3 ``<|open|>think<|sep|>…<|close|>think<|sep|>``: reasoning up to the first close
    (from the first open, or from the start when the prompt ate the opener); an output with
    neither but a response channel is all content. The content loses its
    ``response``/``message`` wrapper unless tool calls are being parsed."""

    name = "kimi_k3"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """The newest think marker (a three-token sequence) of the prompt is a close."""
        if not KIMI_K3.of(ctx):
            return True
        encode = getattr(ctx.vocab, "encode", None)
        if encode is None:
            return False
        opener, closer = (list(encode(m)) for m in _K3_THINK_MARKERS)
        ids = list(prompt_token_ids)
        for i in range(len(ids) - 1, -1, -1):
            if closer and ids[i : i + len(closer)] == closer:
                return True
            if opener and ids[i : i + len(opener)] == opener:
                return False
        return False

    def _content(self, text: str) -> str | None:
        ctx = self.ctx
        if ctx.tools and ctx.tool_choice != "none":
            return text or None
        ro = _K3_RESPONSE_OPEN.search(text)
        rc = _K3_RESPONSE_CLOSE.search(text, ro.end() if ro else 0)
        if ro and rc:
            text = text[ro.end() : rc.start()]
        elif ro:
            text = text[ro.end() :]
        else:
            text = _K3_RESPONSE_CLOSE.sub("", _K3_RESPONSE_OPEN.sub("", text))
        return _K3_MESSAGE_CLOSE.sub("", text) or None

    def split(self, text: str) -> tuple[str | None, str | None]:
        if not KIMI_K3.of(self.ctx):
            return None, self._content(text)
        opened = _K3_THINK_OPEN.search(text)
        start = opened.end() if opened else 0
        closed = _K3_THINK_CLOSE.search(text, start)
        if closed:
            return text[start : closed.start()] or None, self._content(text[closed.end() :])
        if not opened and _K3_RESPONSE_OPEN.search(text):
            return None, self._content(text)
        return text[start:] or None, None
