"""Muse (Spark, Glimmer): ATEM calls inside recipient-addressed messages.

    <|start|>assistant to=self<|message|>…<|eom|>
    <|start|>assistant to=tool.fn<|message|><atem:function_calls>
    <atem:invoke name="tool.fn"><atem:parameter name="k">v</atem:parameter></atem:invoke>
    </atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>…<|eot|>

vLLM 0.33's one-shot rules, replayed on the whole text (in ``whole`` mode held until
``finish()``: whether any of it is content depends on the framing that follows;
``MuseStreamedCalls`` reads the messages as they arrive):

* the text is cut into messages at each header (``<|start|>assistant``, an optional
  `` to=NAME``, then ``<|message|>``); a message ends at ``<|eom|>``/``<|eot|>``, the next
  header or a stray ``<|start|>``;
* calls are the complete ``<atem:invoke …>…</atem:invoke>`` in messages addressed to a
  non-channel recipient (or in the whole text when it has no header at all); a parameter
  value is JSON-decoded when it parses, kept raw otherwise, and always raw for a
  string-typed parameter (Spark only); ``x.x`` names collapse to a registered ``x``;
* content is the user-facing messages' bodies, or the whole text when unframed.

Reasoning is routed by recipient too, on the whole output (``muse_reasoning.py``).
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import ClassVar

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, decided_delta
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix

_HEADER = re.compile(
    r"(?:<\|start\|>\s*assistant)?[^\S\n]*(?:to=(?P<rcpt>[A-Za-z0-9_.\-]+))?<\|message\|>"
)
_END = re.compile(r"<\|eom\|>|<\|eot\|>")
_INVOKE = re.compile(r"(<atem:invoke\b.*?</atem:invoke>)", re.DOTALL)
_INVOKE_NAME = re.compile(r'<atem:invoke\b[^>]*?\bname="([^"]+)"')
_PARAM = re.compile(
    r'<atem:parameter\b[^>]*?\bname="(?P<key>[^"]+)"[^>]*?>(?P<value>.*?)</atem:parameter>',
    re.DOTALL,
)
_CALLS_OPEN = "<atem:function_calls>"


class MuseDialect:
    """Which recipients are reasoning, content or no tool, and whether strings stay raw."""

    def __init__(self, reasoning: tuple, content: tuple, non_tool: tuple, raw_strings: bool):
        self.reasoning = reasoning
        self.content = content
        self.non_tool = non_tool
        self.raw_strings = raw_strings


SPARK = MuseDialect((None, "self"), ("user", "commentary"),
                    ("self", "user", "commentary", "developer"), True)
GLIMMER = MuseDialect(("self",), (None, "user"), ("self", "user"), False)


def messages(text: str) -> list[tuple[str | None, str]]:
    """``(recipient, body)`` of each message, in order."""
    out = []
    pos = 0
    while pos < len(text):
        header = _HEADER.search(text, pos)
        if header is None:
            break
        start = header.end()
        end = _END.search(text, start)
        nxt = _HEADER.search(text, start)
        body_end = end.start() if end is not None else len(text)
        if nxt is not None and nxt.start() < body_end:
            body_end = next_pos = nxt.start()
        else:
            next_pos = end.end() if end is not None else len(text)
        body = text[start:body_end]
        cut = body.find("<|start|>")
        out.append((header.group("rcpt"), body if cut == -1 else body[:cut]))
        pos = next_pos
    return out


def _decoded(raw: str):
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _tool_names(ctx: ParseContext) -> set[str]:
    return {n for n in ctx.tool_names() if n}


def _string_params(ctx: ParseContext) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for tool in ctx.tools or []:
        fn = (tool.get("function") or tool) if isinstance(tool, dict) else None
        if not isinstance(fn, dict):
            continue
        name, params = fn.get("name"), fn.get("parameters")
        if name and isinstance(params, dict):
            out[name] = {
                k for k, s in (params.get("properties") or {}).items()
                if isinstance(s, dict) and s.get("type") == "string"
            }
    return out


def _bound_name(emitted: str, registered: set[str]) -> str:
    if not registered or emitted in registered:
        return emitted
    head, sep, tail = emitted.partition(".")
    return head if sep and head == tail and head in registered else emitted


def _content(text: str, d: MuseDialect) -> str | None:
    content, reasoning = [], []
    for rcpt, body in messages(text):
        if rcpt in d.reasoning:
            reasoning.append(body)
        elif rcpt in d.content:
            content.append(body)
    if "".join(content):
        return "".join(content)
    if not "".join(reasoning) and _HEADER.search(text) is None:
        return text or None
    return None


def _calls(text: str, ctx: ParseContext, d: MuseDialect) -> list[tuple[str, str]]:
    bodies = [b for r, b in messages(text) if r is not None and r not in d.non_tool]
    if bodies:
        scoped = "\n".join(bodies)
    elif _HEADER.search(text) is None:
        scoped = text
    else:
        scoped = ""
    registered = _tool_names(ctx)
    strings = _string_params(ctx) if d.raw_strings else {}
    calls = []
    for invoke in _INVOKE.findall(scoped):
        m = _INVOKE_NAME.search(invoke)
        if not m:
            continue
        name = _bound_name(m.group(1), registered)
        raw_keys = strings.get(name, set())
        args = {}
        for p in _PARAM.finditer(invoke):
            key, raw = p.group("key"), p.group("value")
            args[key] = raw if key in raw_keys else _decoded(raw)
        calls.append((name, json.dumps(args, ensure_ascii=False)))
    return calls


def extractor(d: MuseDialect):
    def extract(text: str, ctx: ParseContext) -> Extraction:
        calls = []
        if _CALLS_OPEN in text or "<atem:invoke" in text:
            calls = _calls(text, ctx, d)
        return Extraction(_content(text, d), calls)

    return extract


class MuseToolParser(HeldCallsParser):
    """vLLM's ``muse`` / ``musespark1x`` (Muse Spark) format."""

    family = JsonFamily("muse", extractor(SPARK))
    supports_required_and_named: ClassVar[bool] = False


class MuseGlimmerToolParser(HeldCallsParser):
    """vLLM's ``muse_glimmer``: Spark's format, other recipients, no raw-string parameters."""

    family = JsonFamily("muse_glimmer", extractor(GLIMMER))
    supports_required_and_named: ClassVar[bool] = False


tool_parser("muse", "musespark1x", family="muse")(MuseToolParser)
tool_parser("muse_glimmer", family="muse")(MuseGlimmerToolParser)


# Where the incremental parser is: before the first header (an output with none is decided
# whole at its end), between messages, in a message's body.
PRE, BETWEEN, BODY = range(3)
# What a body is to the tool parser.
DROPPED, CONTENT_BODY, TOOL_BODY = range(3)
# Where the invoke reader is in a tool body.
OUT, INVOKE_TAG, LIVE, SKIP, PARAM_TAG, VALUE = range(6)
MESSAGE, START, EOM, EOT = "<|message|>", "<|start|>", "<|eom|>", "<|eot|>"
INVOKE, INVOKE_END, PARAM, PARAM_END = "<atem:invoke", "</atem:invoke>", "<atem:parameter", "</atem:parameter>"
_HEADER_BEFORE = re.compile(r"(?:<\|start\|>\s*assistant)?[^\S\n]*(?:to=(?P<rcpt>[A-Za-z0-9_.\-]+))?$")
# What may begin a header at the end of a body: a recipient being written.
_HEADER_PART = re.compile(r"[^\S\n]*(?:t|to|to=[A-Za-z0-9_.\-]*)?$")
# What may begin a header after a ``<|start|>`` (a loose superset: it is only held).
_STARTED_HEADER = re.compile(r"<\|start\|>\s*[a-z]*[^\S\n]*(?:to=?[A-Za-z0-9_.\-]*)?(?:<\|?[a-z]*\|?)?")
_TAG_NAME = re.compile(r'[^>]*?\bname="([^"]+)"[^>]*', re.S)


class MuseStreamedState(ParserState):
    where: int = PRE
    buf: str = ""  # a possible end of the body or start of a header
    raw: str = ""  # the output while no header was read (decided whole if none comes)
    kind: int = DROPPED  # the body's
    said: bool = False  # content that is not empty was sent
    inv: int = OUT
    tag: str = ""  # the invoke reader's held text: a partial tag, an opening tag
    index: int = 0  # the open (or next) call's index
    name: str = ""  # the open call's tool
    streams: bool = False  # the parameter's value streams as written (else it is held)
    key: str = ""
    value: str = ""  # a held value so far
    members: int = 0  # the open call's parameters sent


def _header_tail(buf: str) -> str:
    """The end of text outside messages that may begin a header."""
    keep = partial_suffix(buf, (MESSAGE,))
    keep += len(_HEADER_PART.search(buf[: len(buf) - keep]).group())
    start = buf.rfind(START)
    if start != -1 and _STARTED_HEADER.fullmatch(buf, start):
        keep = max(keep, len(buf) - start)
    return buf[len(buf) - keep:]


def _named_tag(tag: str) -> str | None:
    """The ``name`` of an ``<atem:invoke …>``/``<atem:parameter …>`` tag's text (after the tag's
    name), or None when it has none."""
    if tag[:1].isalnum() or tag[:1] == "_":
        return None
    m = _TAG_NAME.fullmatch(tag)
    return None if m is None else m.group(1)


class MuseStreamedCalls(ToolParser):
    """``muse``/``muse_glimmer`` for ``--tool-call-streaming incremental``: messages are read as
    they arrive; a user-facing body streams as content; in a body addressed to a tool, an
    ``<atem:invoke>`` opens its call when its tag closes, a raw-string parameter (Spark,
    string-typed) streams as written, others are held to their end and decoded as in one-shot.

    Held: a possible header at a body's end; an output while it has no header (vLLM reads an
    unframed one whole: it is decided whole at the end). Malformed output, the documented
    answer: an invoke left open when its body ends is closed (vLLM reads the tool bodies
    joined, so it may go on in the next one), a value left open is closed if it was streaming
    and dropped if held.
    """

    streams_arguments = True
    State = MuseStreamedState
    dialect: ClassVar[MuseDialect]

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.registered = _tool_names(ctx)
        self.strings = _string_params(ctx) if self.dialect.raw_strings else {}
        self.load(MuseStreamedState())

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == PRE:
            self.raw += text
        buf, self.buf = self.buf + text, ""
        while buf:
            buf = self._body(buf, out) if self.where == BODY else self._between(buf)
        return out

    def _between(self, buf: str) -> str:
        """Text outside messages (dropped) up to the next header; returns what follows it."""
        m = buf.find(MESSAGE)
        if m == -1:
            self.buf = _header_tail(buf)
            return ""
        rcpt, d = _HEADER_BEFORE.search(buf[:m]).group("rcpt"), self.dialect
        self.where, self.raw, self.inv = BODY, "", OUT
        self.kind = (CONTENT_BODY if rcpt in d.content else
                     TOOL_BODY if rcpt is not None and rcpt not in d.non_tool else DROPPED)
        return buf[m + len(MESSAGE):]

    def _body(self, buf: str, out: Delta) -> str:
        """Body text up to its end (an end marker, a ``<|start|>``, the next header); returns
        the text after it."""
        pos, marker = find_first(buf, (EOM, EOT, START, MESSAGE))
        if marker is None:
            keep = partial_suffix(buf, (EOM, EOT, START, MESSAGE))
            keep += len(_HEADER_PART.search(buf[: len(buf) - keep]).group())
            self._read(buf[: len(buf) - keep], out)
            self.buf = buf[len(buf) - keep:]
            return ""
        end, rest = pos, buf[pos:]
        if marker in (EOM, EOT):
            rest = buf[pos + len(marker):]
        elif marker == MESSAGE:
            end = _HEADER_BEFORE.search(buf[:pos]).start()
            rest = buf[end:]
        self._read(buf[:end], out)
        self._end_body(out)
        return rest

    def _read(self, text: str, out: Delta) -> None:
        if self.kind == CONTENT_BODY and text:
            out.content += text
            self.said = True
        elif self.kind == TOOL_BODY:
            self._invokes(text, out)

    def _end_body(self, out: Delta) -> None:
        if self.kind == TOOL_BODY and self.inv not in (OUT, INVOKE_TAG, SKIP):
            if self.inv == VALUE:
                self._end_value(out, closed=False)
            self._send(out, "}")
            self.index += 1
        self.where, self.inv, self.tag = BETWEEN, OUT, ""

    def _send(self, out: Delta, text: str) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(self.index, arguments=text))

    def _invokes(self, text: str, out: Delta) -> None:
        """A tool body's text: invokes and their parameters."""
        buf, self.tag = self.tag + text, ""
        while buf:
            inv = self.inv
            if inv in (INVOKE_TAG, PARAM_TAG):
                end = buf.find(">")
                if end == -1:
                    self.tag = buf
                    return
                name, buf = _named_tag(buf[:end]), buf[end + 1:]
                if inv == PARAM_TAG:
                    self.inv = LIVE if name is None else VALUE
                    if name is not None:
                        self._begin_value(name, out)
                elif name is None:
                    self.inv = SKIP
                else:
                    self.name, self.members, self.inv = _bound_name(name, self.registered), 0, LIVE
                    out.tool_calls.append(ToolCallDelta(self.index, name=self.name, arguments="{"))
                continue
            markers = {OUT: (INVOKE,), LIVE: (PARAM, INVOKE_END), SKIP: (INVOKE_END,)}.get(inv, (PARAM_END, INVOKE_END))
            pos, marker = find_first(buf, markers)
            if marker is None:
                keep = partial_suffix(buf, markers)
                if inv == VALUE:
                    self._value_text(buf[: len(buf) - keep], out)
                self.tag = buf[len(buf) - keep:]
                return
            if inv == VALUE:
                self._value_text(buf[:pos], out)
                self._end_value(out, closed=marker == PARAM_END)
                self.inv = LIVE
            buf = buf[pos + len(marker):]
            if marker == INVOKE:
                self.inv = INVOKE_TAG
            elif marker == PARAM:
                self.inv = PARAM_TAG
            elif marker == INVOKE_END:
                if inv != SKIP:
                    self._send(out, "}")
                    self.index += 1
                self.inv = OUT

    def _begin_value(self, key: str, out: Delta) -> None:
        self.key, self.value = key, ""
        self.streams = key in self.strings.get(self.name, set())
        if self.streams:
            self._send(out, f'{", " if self.members else ""}{encode_basestring(key)}: "')
            self.members += 1

    def _value_text(self, text: str, out: Delta) -> None:
        if self.streams:
            self._send(out, encode_basestring(text)[1:-1])
        else:
            self.value += text

    def _end_value(self, out: Delta, closed: bool) -> None:
        """A value ends: a streamed one is closed; a held one is sent decoded, or dropped when
        it was left open."""
        if self.streams:
            self._send(out, '"')
        elif closed:
            sep = ", " if self.members else ""
            self.members += 1
            self._send(out, f"{sep}{encode_basestring(self.key)}: {json.dumps(_decoded(self.value), ensure_ascii=False)}")
        self.value = ""

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == PRE:
            out = decided_delta(self, extractor(self.dialect)(self.raw, self.ctx), lambda index: None)
        else:
            if self.where == BODY:
                buf, self.buf = self.buf, ""
                self._read(buf, out)
                self._end_body(out)
            if not self.said:
                self.null_content = True
        self.where, self.raw, self.buf = BETWEEN, "", ""
        return out


MuseToolParser.incremental = type("MuseStreamedCalls", (MuseStreamedCalls,), {"name": "muse", "dialect": SPARK})
MuseGlimmerToolParser.incremental = type("MuseGlimmerStreamedCalls", (MuseStreamedCalls,),
                                         {"name": "muse_glimmer", "dialect": GLIMMER})
