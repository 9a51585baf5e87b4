"""IBM Granite: 3.x, 4 and 20B-FunctionCalling tool calls, and 3.x reasoning.

Granite 3.x: ``<|tool_call|>`` (3.0, a special token) or ``<tool_call>`` (3.1, plain text)
followed by a JSON array of ``{"name", "arguments"}`` objects; no end marker, the ``]`` ends it.

vLLM 0.33 parses this with its declarative engine in JSON-array mode; this module replays the
engine's one-shot pass over the whole text (held until ``finish()`` like every family of
:mod:`json_tags`, since leading whitespace and trailing text depend on later calls):

* a lexer matches the markers and the tokenizer's other special tokens (which vanish);
* after a marker, whitespace is skipped; anything but ``[`` abandons the call region (the
  marker and skipped whitespace are lost, the rest is content); inside the array, whitespace
  and ``,`` separate elements, ``]`` closes it, a ``{…}`` element is one call, anything else
  abandons the region;
* the name is the first ``"name": "…"`` in the element, the arguments the verbatim text of its
  top-level ``"arguments"`` object, re-serialized only when the tool schema coerces a value;
* with calls, content is the text before the first element, ``strip()``-ed; text after it is
  dropped. ``tool_choice="none"`` keeps every text outside the call regions instead.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolParser
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.lexer import special_token_texts
from tokenbridge.parsers.engine.json import json_member_object, name_and_args_from_json
from tokenbridge.parsers.engine.json_calls import CallObject, CallObjectState, OpenCall, StreamedJsonCalls
from tokenbridge.parsers.engine.lexer import lex, scan_markers
from tokenbridge.parsers.engine.schema import fix_arg_types
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.declare import RenderRules
from tokenbridge.parsers.engine.json import dumps_args, name_of
from tokenbridge.parsers.engine.held import WholeTextParser

MARKERS = ("<|tool_call|>", "<tool_call>")
_JSON_WS = " \t\r\n"
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')


class _Element:
    """Character-level twin of vLLM's argument scanner: depth counts ``{``/``[`` alike."""

    __slots__ = ("body", "depth", "in_str", "esc")

    def __init__(self) -> None:
        self.body = ""
        self.depth = 0
        self.in_str = False
        self.esc = False

    def push(self, ch: str) -> bool:
        """Append ``ch``; True when it closed the element object."""
        self.body += ch
        if self.esc:
            self.esc = False
        elif self.in_str:
            if ch == "\\":
                self.esc = True
            elif ch == '"':
                self.in_str = False
        elif ch == '"':
            self.in_str = True
        elif ch in "{[":
            self.depth += 1
        elif ch in "}]":
            if self.depth > 0:
                self.depth -= 1
            return ch == "}" and self.depth == 0
        return False


def scan(text: str, drops: list[str]) -> tuple[list[str], list[str], list[str], bool]:
    """One engine pass: (content before the first element, content after it, element bodies,
    whether any element started)."""
    before: list[str] = []
    after: list[str] = []
    bodies: list[str] = []
    state = "content"  # content | array_open | array | element
    elem: _Element | None = None
    started = False

    def emit(s: str) -> None:
        (after if started else before).append(s)

    for is_marker, piece in lex(text, MARKERS, drops):
        if state == "content" and is_marker:
            state = "array_open"
            continue
        for k, ch in enumerate(piece):
            if state == "content":
                emit(piece[k:])
                break
            if state == "element":
                if elem.push(ch):
                    bodies.append(elem.body)
                    elem = None
                    state = "array"
                continue
            if ch in _JSON_WS:
                continue
            if state == "array_open":
                if ch == "[":
                    state = "array"
                    continue
                state = "content"
                emit(piece[k:])
                break
            if ch == ",":
                continue
            if ch == "{":
                started = True
                elem = _Element()
                elem.push(ch)
                state = "element"
                continue
            if ch == "]":
                state = "content"
                emit(piece[k + 1 :])
                break
            state = "content"
            emit(piece[k:])
            break
    if elem is not None:
        bodies.append(elem.body)
    return before, after, bodies, started


def element_call(body: str, tools: list[dict] | None) -> tuple[tuple[str, str] | None, bool]:
    """``(call or None, name found while streaming)`` for one element body."""
    m = _NAME.search(body)
    streamed_name = m.group(1) if m and m.group(1) else ""
    name = streamed_name.strip()
    if not name:
        if not body.strip():
            return None, False
        fallback_name, args = name_and_args_from_json(body)
        if not fallback_name:
            return None, False
        if not isinstance(fallback_name, str):
            return None, False
        name = fallback_name
    elif body.strip():
        try:
            span = json_member_object(body, "arguments")
            args = "{}" if span is None else span
        except ValueError:
            args = name_and_args_from_json(body)[1] if body.strip() else "{}"
    else:
        args = "{}"
    return (name, fix_arg_types(args, name, tools)), bool(streamed_name)


def extract_granite(text: str, ctx: ParseContext) -> Extraction:
    drops = special_token_texts(ctx.vocab, MARKERS)
    before, after, bodies, started = scan(text, drops)
    suppress = ctx.tool_choice == "none" and bool(ctx.tools)
    if suppress:
        return Extraction("".join(before) + "".join(after) or None, [])
    calls: list[tuple[str, str]] = []
    any_streamed = False
    for body in bodies:
        call, streamed = element_call(body, ctx.tools)
        any_streamed = any_streamed or streamed
        if call is not None:
            calls.append(call)
    content = "".join(before)
    if not any_streamed:
        content += "".join(after)
    if started and not content.strip():
        content = ""
    if calls:
        content = content.strip()
    if ctx.tool_choice == "none":
        return Extraction(content or None, [])
    return Extraction(content or None, calls)


class GraniteToolParser(HeldCallsParser):
    """vLLM's ``granite`` (engine) tool-call format."""

    family = JsonFamily("granite", extract_granite)
    # vLLM runs engine-based tool parsers for tool_choice="none" too (they strip call markup),
    # and maps empty content to null.
    engine_based: ClassVar[bool] = True


tool_parser("granite", family="granite", render=RenderRules("always"))(GraniteToolParser)


# -- incremental (granite) --------------------------------------------------------------------------------

CONTENT, ARRAY_OPEN, ARRAY, ELEMENT, BROKEN = range(5)


class GraniteStreamState(ParserState):
    """Where the stream is; the comments say what is held back."""

    mode: int = CONTENT
    pending: str = ""  # a possible partial marker or special token
    held: str = ""  # content not decided yet: trailing whitespace, or all of it after a blank start
    lead: bool = False  # the content began with whitespace (kept only if no call comes)
    emitted: bool = False  # some content was sent
    named: bool = False  # a call was sent: text outside the calls is dropped from now on
    index: int = 0  # the next call's index
    raw: str = ""  # the open element's text while its name is not sent yet
    call: CallObjectState | None = None  # the open element's parse position, exactly in ELEMENT

    def check(self) -> None:
        if (self.call is None) != (self.mode != ELEMENT):
            raise ValueError("bad granite parser state: a call is open exactly in ELEMENT")


class GraniteStreamedCalls(OpenCall, ToolParser):
    """``granite`` for ``--tool-call-streaming incremental``: each element of the array opens a
    call when its ``"name"`` string closes; its ``"arguments"`` object streams as written (the
    one-shot answer keeps it verbatim).

    The documented answer where a stream cannot be the one-shot one: a value the tool's schema
    coerces (a number written as a string, …) is sent as written (the one-shot answer then
    re-serializes the arguments); the name is the element's own ``"name"`` member (the one-shot
    answer takes the first ``"name": "…"`` text, which arguments written before it may hold); an
    element that breaks JSON (or closes with no name or no object ``arguments``) stops parsing:
    its call, if sent, stands, and the text from the breaking byte (or, before its name, from the
    element's start) is content. Content that begins with whitespace is held until the first
    call (which strips it) or the end.
    """

    name = "granite"
    engine_based = True
    streams_arguments = True
    State = GraniteStreamState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        drops = special_token_texts(ctx.vocab, MARKERS)
        self.lits = {**dict.fromkeys(drops, False), **dict.fromkeys(MARKERS, True)}
        self.load(GraniteStreamState())

    def _new_call(self) -> CallObject:
        return CallObject(False, ("arguments",), stop_at_close=True, args_first="{", missing_args="{}",
                          args_opts={"verbatim": True, "strict": False})

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        self.pending = scan_markers(self.pending + text, self.lits, lambda t: self._text(t, out),
                                    lambda m: self._marker(m, out))
        return out

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        text, self.pending = self.pending, ""
        self._text(text, out)
        if self.mode == ELEMENT and not self._call.named:
            self._break(self.raw, out)
        if not self.named:
            out.content += self.held
        self.held, self.mode, self._call = "", BROKEN, None
        return out

    def _marker(self, marker: str, out: Delta) -> None:
        if not self.lits[marker]:
            return  # another special token: it vanishes
        if self.mode == CONTENT:
            self.mode = ARRAY_OPEN
        else:
            self._text(marker, out)

    def _text(self, text: str, out: Delta) -> None:
        i, n = 0, len(text)
        while i < n:
            mode = self.mode
            if mode in (CONTENT, BROKEN):
                self._content(text[i:], out)
                return
            if mode == ELEMENT:
                i += self._element(text[i:], out)
                continue
            c = text[i]
            if c in _JSON_WS or (c == "," and mode == ARRAY):
                i += 1
            elif mode == ARRAY_OPEN and c == "[":
                self.mode = ARRAY
                i += 1
            elif mode == ARRAY and c == "{":
                self.mode, self._call, self.raw = ELEMENT, self._new_call(), ""
            elif mode == ARRAY and c == "]":
                self.mode = CONTENT
                i += 1
            else:  # not a call region after all: the text from here on is content
                self.mode = CONTENT

    def _element(self, text: str, out: Delta) -> int:
        used, named = self._step_call(text, out.tool_calls)
        if named:
            self._calls_made(out)
        call = self._call
        if call.broken is not None:
            self._break(call.broken if call.named else self.raw, out)
            return len(text)
        if call.complete:
            self.mode, self._call = ARRAY, None
            self.index += 1
        return used

    def _calls_made(self, out: Delta) -> None:
        """The first call: the content before it is final, ``strip()``-ed."""
        if not self.named:
            self.named = True
            held, self.held = self.held, ""
            out.content += held.strip() if self.lead else ""

    def _break(self, tail: str, out: Delta) -> None:
        """Stop parsing: content held so far is content as written (no call was made) or was
        already settled (one was); the rest, from ``tail`` on, is content."""
        if not self.named:
            out.content += self.held
        self.mode, self._call, self.raw, self.held = BROKEN, None, "", ""
        out.content += tail

    def _content(self, text: str, out: Delta) -> None:
        if self.mode == BROKEN:
            out.content += text
            return
        if self.named or not text:
            return
        held = self.held + text
        if not self.emitted and not self.lead:
            if not held.strip():
                self.held = held
                return
            self.lead = held[0].isspace()
        if self.lead:
            self.held = held
            return
        body = held.rstrip()
        out.content += body
        self.emitted = self.emitted or bool(body)
        self.held = held[len(body):]


GraniteToolParser.incremental = GraniteStreamedCalls


GRANITE4_START, GRANITE4_END = "<tool_call>", "</tool_call>"


_GRANITE4_DELIMS = re.compile(f"{re.escape(GRANITE4_START)}|{re.escape(GRANITE4_END)}")


def extract_granite4(text: str, ctx: ParseContext) -> Extraction:
    """Granite 4 ``<tool_call>{…}</tool_call>``: every call must be closed, non-empty, a
    ``{"name", "arguments"}`` object, and tags must alternate; otherwise the whole text is
    content. Content is all text outside the calls, joined."""
    outside: list[str] = []
    calls: list[tuple[str, str]] = []
    in_call = False
    cut = 0
    try:
        for m in _GRANITE4_DELIMS.finditer(text):
            piece = text[cut : m.start()]
            if m.group() == GRANITE4_START:
                if in_call:
                    raise ValueError("two tool call starts in a row")
                outside.append(piece)
            else:
                if not in_call or not piece:
                    raise ValueError("unmatched or empty tool call")
                obj = json.loads(piece)
                if not isinstance(obj, dict):
                    raise TypeError("tool call is not an object")
                value = obj["arguments"]
                if value is None:
                    raise TypeError("arguments are null")
                calls.append((name_of(obj), value if isinstance(value, str) else dumps_args(value)))
            in_call = not in_call
            cut = m.end()
        if in_call:
            raise ValueError("incomplete tool call")
    except Exception:
        return as_content(text)
    outside.append(text[cut:])
    return Extraction("".join(outside) or None, calls)


_DECODER = json.JSONDecoder()
GRANITE_FC_BOT = "<function_call>"


_GRANITE_FC_CALL = re.compile(r"<function_call>\s*")


def extract_granite_20b_fc(text: str, ctx: ParseContext) -> Extraction:
    """Granite-20B-FunctionCalling: each ``<function_call>`` is followed by one JSON object
    (text after it up to the next marker is ignored); any failure makes it all content."""
    if GRANITE_FC_BOT not in text:
        return as_content(text)
    marks = list(_GRANITE_FC_CALL.finditer(text))
    try:
        calls = []
        for m, nxt in zip(marks, [*marks[1:], None]):
            obj, _ = _DECODER.raw_decode(text[m.end() : nxt.start() if nxt else None])
            calls.append((name_of(obj), dumps_args(obj["arguments"])))
    except Exception:
        return as_content(text)
    return Extraction(text[: text.find(GRANITE_FC_BOT)] or None, calls)


# Granite 4 and Granite-20B-FunctionCalling: a marker and a JSON body, decided on the whole text.
Granite4ToolParser = tool_parser("granite4", family="granite4", render=RenderRules("with_tools"))(
    held_calls_parser(JsonFamily("granite4", extract_granite4, (GRANITE4_START, GRANITE4_END)))
)


class Granite4StreamedCalls(StreamedJsonCalls):
    """``granite4`` for ``--tool-call-streaming incremental``: hermes' reading, with text between
    and after calls kept as content and string arguments kept as their text. Where the one-shot
    answer turns the whole output into content (an unclosed or malformed call, ``null``
    arguments), the stream gives the documented answer of ``json_calls``."""

    name = "granite4"
    start, end = GRANITE4_START, GRANITE4_END
    args_opts = {"raw_string": True}
    keeps_text_between = True


Granite4ToolParser.incremental = Granite4StreamedCalls
GraniteFcToolParser = tool_parser("granite-20b-fc", family="granite-20b-fc")(
    held_calls_parser(JsonFamily("granite-20b-fc", extract_granite_20b_fc, GRANITE_FC_BOT))
)


class GraniteFcStreamedCalls(StreamedJsonCalls):
    """``granite-20b-fc`` for ``--tool-call-streaming incremental``: each ``<function_call>``
    object is a call (its ``}`` ends it; text up to the next marker is dropped). Where the
    one-shot answer turns the whole output into content (a malformed object, no
    ``arguments``), the stream gives the documented answer of ``json_calls``."""

    name = "granite-20b-fc"
    start, end = GRANITE_FC_BOT, None


GraniteFcToolParser.incremental = GraniteFcStreamedCalls


_GRANITE = re.compile(
    r"(?:Here's|Here is) my thought process:(.*?)(?:Here's|Here is) my response:(.*)", re.DOTALL
)


@reasoning_parser("granite", family="granite")
class GraniteReasoningParser(WholeTextParser):
    """Granite 3.x: "Here is my thought process: … Here is my response: …"; no match, all content."""

    name = "granite"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        # vLLM's base ``is_reasoning_end`` has no body: render reports null.
        return None  # type: ignore[return-value]

    def split(self, text: str) -> tuple[str | None, str | None]:
        m = _GRANITE.search(text)
        if not m:
            return None, text
        return m.group(1), m.group(2) or None
