"""dots.llm ``<dots_function_call>`` blocks, as vLLM 0.33 reads them (non-streaming).

A block holds ``<invoke name="fn"><parameter name="p">value</parameter></invoke>`` elements
(or, as a fallback, one ``{"name", "arguments"}`` JSON object). Parameter values are typed by
the tool's schema (``$ref``/``anyOf`` resolved); only calls to tools of the request count. A
block that fails to parse is skipped. With calls, content is the stripped text before the first
marker; without, the whole text. In ``whole`` mode the text is held until ``finish()`` (the
strip depends on what follows); ``DotsStreamedCalls`` streams the calls.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Any, ClassVar

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, as_content
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix
from tokenbridge.parsers.engine.schema import tool_function

START, END = "<dots_function_call>", "</dots_function_call>"
_BLOCK = re.compile(rf"{START}\s*(.*?)\s*{END}", re.S)
_INVOKE = re.compile(r"<invoke\s+name\s*=\s*(?P<name>[^>]+)>(?P<body>.*?)</invoke>", re.S)
_PARAMETER = re.compile(r"<parameter\s+name\s*=\s*(?P<name>[^>]+)>(?P<value>.*?)</parameter>", re.S)


def unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def schema_type(schema: Any, defs: dict, depth: int = 0) -> Any:
    """The declared ``type`` of a property schema, through ``$ref`` and non-null alternatives."""
    if not isinstance(schema, dict) or depth > 10:
        return None
    if "type" in schema:
        return schema["type"]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return schema_type(defs.get(ref.rsplit("/", 1)[-1]), defs, depth + 1)
    for keyword in ("anyOf", "oneOf", "allOf"):
        options = schema.get(keyword)
        if not isinstance(options, list):
            continue
        for option in options:
            if isinstance(option, dict) and option.get("type") == "null":
                continue
            found = schema_type(option, defs, depth + 1)
            if found is not None:
                return found
    return None


def convert(value: str, declared: Any) -> Any:
    """A parameter's text as the declared type (``null`` is null whatever the type)."""
    if value.lower() == "null":
        return None
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "string")
    kind = str(declared).lower()
    if kind in ("string", "str", "text"):
        return value
    if kind in ("integer", "int"):
        try:
            return int(value)
        except ValueError:
            return value
    if kind in ("number", "float"):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    if kind in ("boolean", "bool"):
        return value.lower() in ("true", "1")
    try:
        return json.loads(value)
    except ValueError:
        return value


def tool_schema(tools: list[dict] | None, name: str) -> tuple[dict, dict]:
    """``(properties, $defs)`` of the first tool called ``name``."""
    fn = tool_function(tools, name)
    params = fn.get("parameters") if fn else None
    if not isinstance(params, dict):
        return {}, {}
    props, defs = params.get("properties", {}), params.get("$defs", {})
    return (props if isinstance(props, dict) else {}), (defs if isinstance(defs, dict) else {})


def block_calls(body: str, tools: list[dict] | None) -> list[dict]:
    body = body.strip()
    if body.startswith("<invoke"):
        calls = []
        for m in _INVOKE.finditer(body):
            name = unquote(m.group("name"))
            props, defs = tool_schema(tools, name)
            args = {}
            for p in _PARAMETER.finditer(m.group("body")):
                key = unquote(p.group("name"))
                declared = schema_type(props[key], defs) or "string" if key in props else "string"
                args[key] = convert(p.group("value").strip(), declared)
            calls.append({"name": name, "arguments": args})
        return calls
    parsed = json.loads(body)
    if not isinstance(parsed, dict):
        raise TypeError("a JSON tool call must be an object")
    return [parsed]


def valid_calls(entries: list[dict], known: set[str]) -> list[tuple[str, str]]:
    """The block's calls to tools of the request whose arguments are an object."""
    calls = []
    for entry in entries:
        name = entry.get("name")
        if not isinstance(name, str) or name not in known:
            continue
        args = entry.get("arguments", entry.get("parameters", {})) or {}
        if isinstance(args, dict):
            calls.append((name, dumps_args(args)))
    return calls


def extract_dots(text: str, ctx: ParseContext) -> Extraction:
    marker = text.find(START)
    if marker == -1:
        return as_content(text)
    known = ctx.tool_names()
    calls: list[tuple[str, str]] = []
    for block in _BLOCK.finditer(text):
        try:
            entries = block_calls(block.group(1), ctx.tools)
        except (TypeError, ValueError):
            continue
        calls += valid_calls(entries, known)
    if not calls:
        return as_content(text)
    return Extraction(text[:marker].strip() or None, calls)


@tool_parser("dots", family="dots")
class DotsToolParser(HeldCallsParser):
    """vLLM's ``dots`` tool-call format."""

    family = JsonFamily("dots", extract_dots)
    supports_required_and_named: ClassVar[bool] = False


# Where the incremental parser is: at the output's start, before the first block (streaming, or
# holding all of an output that began blank), between blocks, at a block's start,
# in a JSON block, in an XML block outside an invoke, in an invoke's or a parameter's opening
# tag, in an invoke (known tool or not), in a parameter's value, or done.
(FIRST, BEFORE, HOLD_ALL, OUTSIDE, HEAD, JSON_BLOCK, BETWEEN, INVOKE_TAG, LIVE, SKIP, PARAM_TAG, VALUE,
 DONE) = range(13)
INVOKE, INVOKE_END, PARAM, PARAM_END = "<invoke", "</invoke>", "<parameter", "</parameter>"
_TAG_NAME = re.compile(r"\s+name\s*=\s*([^>]+)", re.S)
_NULL = "null"


class DotsStreamedState(ParserState):
    where: int = FIRST
    buf: str = ""  # held text: a partial marker, an opening tag, a JSON block, a blank run
    raw: str = ""  # everything from the first block on while no call is sent (content if none is)
    pre: str = ""  # the stripped text before the first block, sent with the first call (HOLD_ALL)
    index: int = 0  # the open (or next) call's index
    name: str = ""  # the open call's tool
    members: int = 0  # the open call's parameters sent
    key: str = ""  # the parameter being read
    streams: bool = False  # its value streams as a string (else it is held to its end)
    value: str = ""  # the value held: all of it, or (streaming) what may still be null or a blank run
    decided: bool = False  # a streaming value is known not to be null (its quote was sent)


class DotsStreamedCalls(ToolParser):
    """``dots`` for ``--tool-call-streaming incremental``: an ``<invoke>`` of a tool of the
    request opens its call when its opening tag closes; each parameter follows once its tag
    closes, a string value (the schema's type, or none) streaming as it arrives, stripped, and
    held while it may still be ``null``; other values are held to their end and converted as
    in one-shot. A JSON block (vLLM's fallback) is decided whole when it closes.

    Content is the one-shot's: with calls, the stripped text before the first block, so a
    blank run waits for text and an output that begins blank is held until the first call;
    the text from the first block on is held until a call is sent (it is all content if none
    is). Malformed or truncated output: the calls sent stand (the one-shot answer drops an
    invoke or a block left open), a value left open is closed if it was streaming and dropped
    if held, and the text after the first call stays dropped.
    """

    name = "dots"
    streams_arguments = True
    State = DotsStreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.known = ctx.tool_names()
        self.load(DotsStreamedState())

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == FIRST and text:
            self.where = HOLD_ALL if text[0].isspace() else BEFORE
        if self.raw:
            self.raw += text
        self._run(self.buf + text, out)
        return out

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        where, buf = self.where, self.buf
        if where in (FIRST, BEFORE, HOLD_ALL):
            out.content = buf
        elif self.raw:
            out.content = self.raw
        elif where == VALUE:
            self._end_value(out, closed=False)
            self._send(out, "}")
        elif where in (LIVE, PARAM_TAG):
            self._send(out, "}")
        self.where, self.buf, self.raw = DONE, "", ""
        return out

    def _send(self, out: Delta, text: str) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(self.index, arguments=text))

    def _run(self, buf: str, out: Delta) -> None:
        self.buf = ""
        while buf and self.where != DONE:
            where = self.where
            if where in (BEFORE, HOLD_ALL):
                buf = self._before(buf, out)
            elif where == OUTSIDE:
                buf = self._until((START,), buf, lambda m: HEAD)
            elif where == HEAD:
                head = buf.lstrip()
                if not head:
                    return
                if head.startswith(INVOKE):
                    self.where, buf = BETWEEN, head
                elif INVOKE.startswith(head) and END not in buf:
                    self.buf = buf
                    return
                else:
                    self.where = JSON_BLOCK
            elif where == JSON_BLOCK:
                pos = buf.find(END)
                if pos == -1:
                    self.buf = buf
                    return
                self._json_block(buf[:pos], out)
                self.where, buf = OUTSIDE, buf[pos + len(END):]
            elif where in (BETWEEN, SKIP):
                buf = self._until((INVOKE, END) if where == BETWEEN else (INVOKE_END, END), buf,
                                  lambda m: INVOKE_TAG if m == INVOKE else OUTSIDE if m == END else BETWEEN)
            elif where == LIVE:
                buf = self._until((PARAM, INVOKE_END, END), buf, lambda m: self._marker(m, out) or PARAM_TAG)
            elif where in (INVOKE_TAG, PARAM_TAG):
                buf = self._tag(buf, out)
            else:
                buf = self._value(buf, out)

    def _until(self, markers: tuple[str, ...], buf: str, then) -> str:
        """Skips text up to the first of ``markers``; the next position is ``then(marker)``."""
        pos, marker = find_first(buf, markers)
        if marker is None:
            self.buf = buf[len(buf) - partial_suffix(buf, markers):]
            return ""
        self.where = then(marker)
        return buf[pos + len(marker):]

    def _marker(self, marker: str, out: Delta) -> int | None:
        """A call's end (its invoke's, or the block's): ``}`` is sent."""
        if marker == PARAM:
            return None
        self._send(out, "}")
        self.index += 1
        return BETWEEN if marker == INVOKE_END else OUTSIDE

    def _before(self, buf: str, out: Delta) -> str:
        pos = buf.find(START)
        if pos == -1:
            if self.where == BEFORE:
                end = len(buf) - partial_suffix(buf, (START,))
                end = len(buf[:end].rstrip())
                out.content += buf[:end]
                self.buf = buf[end:]
            else:
                self.buf = buf
            return ""
        head = buf[:pos]
        if self.where == HOLD_ALL:
            self.pre, self.raw = head.strip(), buf
        else:
            out.content += head.rstrip()
            self.raw = buf[len(head.rstrip()):]
        self.where = HEAD
        return buf[pos + len(START):]

    def _decide(self, out: Delta) -> None:
        """The first call: what was held before the first block is sent (stripped), the rest dropped."""
        if self.raw:
            out.content += self.pre
            self.raw = self.pre = ""

    def _json_block(self, body: str, out: Delta) -> None:
        try:
            entries = block_calls(body, self.ctx.tools)
        except (TypeError, ValueError):
            return
        for name, args in valid_calls(entries, self.known):
            self._decide(out)
            out.tool_calls.append(ToolCallDelta(self.index, name=name, arguments=args))
            self.index += 1

    def _tag(self, buf: str, out: Delta) -> str:
        """An ``<invoke …>`` or ``<parameter …>`` tag being read up to its ``>``; a tag that is
        not ``name=…`` is text (skipped)."""
        invoke = self.where == INVOKE_TAG
        pos, marker = find_first(buf, (">", END) if invoke else (">", INVOKE_END, END))
        if marker is None:
            self.buf = buf
            return ""
        tag = _TAG_NAME.fullmatch(buf[:pos]) if marker == ">" else None
        if tag is None:
            self.where = BETWEEN if invoke else LIVE
            return buf
        name = unquote(tag.group(1))
        buf = buf[pos + 1:]
        if invoke:
            self.where = SKIP
            if name in self.known:
                self._decide(out)
                self.where, self.name, self.members = LIVE, name, 0
                out.tool_calls.append(ToolCallDelta(self.index, name=name, arguments="{"))
            return buf
        declared = self._declared(name)
        if isinstance(declared, list):
            declared = next((t for t in declared if t != "null"), "string")
        self.where, self.key, self.value, self.decided = VALUE, name, "", False
        self.streams = str(declared).lower() in ("string", "str", "text")
        if self.streams:
            self._send(out, f'{", " if self.members else ""}{encode_basestring(name)}: ')
            self.members += 1
        return buf

    def _declared(self, key: str) -> Any:
        """The parameter's declared type, as the one-shot answer resolves it."""
        props, defs = tool_schema(self.ctx.tools, self.name)
        return schema_type(props[key], defs) or "string" if key in props else "string"

    def _value(self, buf: str, out: Delta) -> str:
        pos, marker = find_first(buf, (PARAM_END, INVOKE_END, END))
        text = buf if marker is None else buf[:pos]
        if marker is None:
            keep = partial_suffix(buf, (PARAM_END, INVOKE_END, END))
            text, self.buf = buf[: len(buf) - keep], buf[len(buf) - keep:]
        self._value_text(text, out)
        if marker is None:
            return ""
        self._end_value(out, closed=marker == PARAM_END)
        self.where = LIVE
        if marker != PARAM_END:
            self.where = self._marker(marker, out)
        return buf[pos + len(marker):]

    def _value_text(self, text: str, out: Delta) -> None:
        value = self.value + text
        if not self.streams:
            self.value = value
            return
        if not self.decided:
            value = value.lstrip()
            if _NULL.startswith(value.rstrip().lower()):
                self.value = value
                return
            self.decided = True
            body = value.rstrip()
            self.value = value[len(body):]
            self._send(out, '"' + encode_basestring(body)[1:-1])
            return
        body = value.rstrip()
        self.value = value[len(body):]
        self._send(out, encode_basestring(body)[1:-1])

    def _end_value(self, out: Delta, closed: bool) -> None:
        """A value ends: sent as the one-shot converts it; one left open (``closed`` False) is
        closed if it was streaming and dropped if held."""
        value, self.value = self.value.strip(), ""
        if self.decided:
            self._send(out, '"')
        elif self.streams:
            self._send(out, "null" if value.lower() == _NULL else encode_basestring(value))
        elif closed:
            sep = ", " if self.members else ""
            self.members += 1
            converted = convert(value, self._declared(self.key))
            self._send(out, f"{sep}{encode_basestring(self.key)}: {json.dumps(converted, ensure_ascii=False)}")


DotsToolParser.incremental = DotsStreamedCalls
