"""K2 Horizon (IFM) tool calls: one ``<ifm|tool_calls>…</ifm|tool_calls>`` group of
``<ifm|tool_call>…</ifm|tool_call>`` calls, each in the request's ``tool_call_format``
(chat template kwarg): ``xml`` (default) ``name<ifm|arg_key>k</ifm|arg_key><ifm|arg_value>v
</ifm|arg_value>…``, ``xml_typed`` (an ``<ifm|arg_type>`` per argument) or ``json``
(``{"name", "arguments"}``).

vLLM 0.33 (``K2HorizonToolParser``): the first closed group decides; anything malformed in it
(stray text, unknown or blank tool name, duplicate or mistyped argument) makes the whole text
content. Values are coerced to the schema (an explicit ``arg_type`` narrows a union). Content is
the text around the group. The class is engine based, so with no call a blank answer is null.
An unsupported ``tool_call_format`` is rejected by vLLM at request time; here it leaves the text
as content. ``K2HorizonStreamedCalls`` streams the ``xml`` formats as they are written.

Reasoning: the markers follow ``reasoning_effort``; without an end marker, reasoning ends at
``<ifm|tool_calls>`` or, failing that, everything is content (so the output is held to the end).
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Annotated, Any

import msgspec

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.held import DONE, HELD, OPEN, Extraction, HeldBlockParser, HeldState, WholeTextParser
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix
from tokenbridge.parsers.engine.reasoning import closed_in_prompt
from tokenbridge.parsers.engine.schema import coerce_string, function_tools, schema_types, types_stay_string

GROUP_START, GROUP_END = "<ifm|tool_calls>", "</ifm|tool_calls>"
CALL_START, CALL_END = "<ifm|tool_call>", "</ifm|tool_call>"
KEY_START, KEY_END = "<ifm|arg_key>", "</ifm|arg_key>"
TYPE_START, TYPE_END = "<ifm|arg_type>", "</ifm|arg_type>"
VALUE_START, VALUE_END = "<ifm|arg_value>", "</ifm|arg_value>"
ARG_MARKERS = (KEY_START, KEY_END, TYPE_START, TYPE_END, VALUE_START, VALUE_END)
FORMATS = frozenset({"json", "xml", "xml_typed"})

_e = re.escape
_CALL = re.compile(f"{_e(CALL_START)}(.*?){_e(CALL_END)}", re.S)
_ARG = re.compile(
    f"{_e(KEY_START)}(.*?){_e(KEY_END)}\\s*(?:{_e(TYPE_START)}(.*?){_e(TYPE_END)}\\s*)?"
    f"{_e(VALUE_START)}(.*?){_e(VALUE_END)}",
    re.S,
)


class InvalidCall(ValueError):
    pass


def _base_type(arg_type: str | None) -> str | None:
    return arg_type.split("[", 1)[0].strip().lower() if arg_type else None


def _coerce_xml(value: str, schema: Any, explicit: str | None) -> Any:
    base = _base_type(explicit)
    types = schema_types(schema)
    if isinstance(schema, dict):
        if base in types and len(types) > 1:
            types = {base}
    elif base == "any":
        return value
    elif base:
        types = {base}
    return coerce_string(value if "string" in types else value.strip(), types)


def _coerce_json(value: Any, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, allow_nan=False)
    return coerce_string(raw, schema_types(schema))


@tool_parser("k2_horizon", family="k2_horizon")
class K2HorizonToolParser(HeldBlockParser):
    """vLLM's ``k2_horizon`` tool-call format."""

    name = "k2_horizon"
    supports_required_and_named = False
    engine_based = True

    def __init__(self, ctx) -> None:
        fmt = ctx.kwarg("tool_call_format", "xml")
        self.format = fmt if isinstance(fmt, str) and fmt in FORMATS else None
        reasoning = registry.get_reasoning_parser(ctx.reasoning_parser) if ctx.reasoning_parser else None
        # vLLM's pair is engine based (blank answers become null) unless a legacy reasoning
        # parser is configured alongside.
        self.engine = reasoning is None or reasoning.engine_based
        super().__init__(ctx)

    def stream_markers(self) -> tuple[str, ...]:
        if self.format is None or self.ctx.tool_choice == "none":
            return ()
        return (GROUP_START,)

    def decision_end(self, held: str) -> int | None:
        end = held.find(GROUP_END, held.find(GROUP_START) + len(GROUP_START))
        return None if end == -1 else end + len(GROUP_END)

    def _no_calls(self, text: str) -> Extraction:
        return Extraction(None if self.engine and not text.strip() else text, [])

    def _tool_name(self, name: Any) -> str:
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise InvalidCall("invalid function name")
        if self.ctx.tools and name not in {n for n, _ in function_tools(self.ctx.tools)}:
            raise InvalidCall("unknown tool name")
        choice = self.ctx.tool_choice
        if isinstance(choice, dict):
            named = (choice.get("function") or {}).get("name", choice.get("name"))
            if name != named:
                raise InvalidCall("not the named tool")
        return name

    def _properties(self, name: str) -> dict:
        for tool_name, parameters in function_tools(self.ctx.tools):
            if tool_name == name:
                return (parameters or {}).get("properties", {})
        return {}

    def _json_call(self, body: str) -> tuple[str, dict]:
        call = json.loads(body.strip())
        if not isinstance(call, dict):
            raise InvalidCall("call is not an object")
        name = self._tool_name(call.get("name"))
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            raise InvalidCall("arguments are not an object")
        props = self._properties(name)
        return name, {k: _coerce_json(v, props.get(k)) for k, v in args.items()}

    def _xml_call(self, body: str) -> tuple[str, dict]:
        first = body.find(KEY_START)
        if first == -1:
            if any(m in body for m in ARG_MARKERS):
                raise InvalidCall("malformed argument tags")
            return self._tool_name(body.strip()), {}
        name = self._tool_name(body[:first].strip())
        props = self._properties(name)
        args: dict[str, Any] = {}
        pos = first
        for m in _ARG.finditer(body, first):
            key, explicit, value = m.group(1).strip(), m.group(2), m.group(3)
            if body[pos : m.start()].strip() or not key or key in args:
                raise InvalidCall("malformed argument")
            if explicit is not None:
                explicit = explicit.strip()
            if self.format == "xml" and explicit is not None:
                raise InvalidCall("type tag in an untyped call")
            if self.format == "xml_typed" and not explicit:
                raise InvalidCall("typed argument without a type")
            args[key] = _coerce_xml(value, props.get(key), explicit)
            pos = m.end()
        if pos == first or body[pos:].strip():
            raise InvalidCall("malformed argument tags")
        return name, args

    def extract(self, text: str, at_start: bool) -> Extraction:
        start = text.find(GROUP_START) if self.stream_markers() else -1
        if start == -1:
            return self._no_calls(text)
        body_start = start + len(GROUP_START)
        end = text.find(GROUP_END, body_start)
        if end == -1:
            return self._no_calls(text)
        group = text[body_start:end]
        bodies = _CALL.findall(group)
        if not bodies or _CALL.sub("", group).strip():
            return self._no_calls(text)
        parse = self._json_call if self.format == "json" else self._xml_call
        try:
            calls = []
            for body in bodies:
                name, args = parse(body)
                calls.append((name, json.dumps(args, ensure_ascii=False, allow_nan=False)))
        except (ValueError, TypeError, AttributeError):
            return self._no_calls(text)
        content = text[:start] + text[end + len(GROUP_END) :]
        return Extraction(content if content.strip() else None, calls)


def _streams_raw(schema: Any, explicit: str | None) -> bool:
    """Whether ``_coerce_xml`` leaves every value of this parameter its raw text."""
    base = _base_type(explicit)
    types = schema_types(schema)
    if isinstance(schema, dict):
        if base in types and len(types) > 1:
            types = {base}
    elif base == "any":
        return True
    elif base:
        types = {base}
    return types_stay_string(types)


# Where the streamed reader is in the group.
GROUP, GAP, NAME, ARGS, KEY, AFTER_KEY, TYPE, AFTER_TYPE, VALUE, END = range(10)
#: The markers each place acts on; any other text is part of what is being read, or (``GAP``,
#: ``ARGS``, ``AFTER_*``: whitespace only) breaks the format.
_STOPS = {
    GAP: (CALL_START, GROUP_END), NAME: (KEY_START, CALL_END, GROUP_END), ARGS: (KEY_START, CALL_END, GROUP_END),
    KEY: (KEY_END, CALL_END, GROUP_END), AFTER_KEY: (TYPE_START, VALUE_START, CALL_END, GROUP_END),
    TYPE: (TYPE_END, CALL_END, GROUP_END), AFTER_TYPE: (VALUE_START, CALL_END, GROUP_END),
    VALUE: (VALUE_END, CALL_END, GROUP_END),
}
_BLANK_ONLY = frozenset((GAP, ARGS, AFTER_KEY, AFTER_TYPE))


class K2HorizonStreamedState(ParserState):
    base: HeldState
    _where: Annotated[int, msgspec.Meta(ge=GROUP, le=END)]
    _back: str  # the group's text that turns to content if it breaks before a name is sent
    _index: Annotated[int, msgspec.Meta(ge=0)]  # calls sent
    _call: str  # the open call's name once sent
    _keys: list[str]  # its arguments so far
    _sent: Annotated[int, msgspec.Meta(ge=0)]  # of which sent (or being sent)
    _held: str  # the name, key or type being read, or a held value
    _type: str | None  # the argument's type tag
    _raw: bool  # the argument's value streams as written
    _inked: bool  # some content that is not blank was sent


class K2HorizonStreamedCalls(K2HorizonToolParser):
    """``--tool-call-streaming incremental`` for the ``xml`` and ``xml_typed`` formats (the
    ``json`` one streams whole, as in ``whole`` mode): content before the group streams as in
    ``whole`` mode; a call opens when its name is read and accepted, each argument when its
    value opens; a value that ``_coerce_xml`` leaves as written streams, others are held to
    their end and sent coerced. Held: the group's start and what follows it until its first
    call is named (a group without a call is content).

    Malformed output, the documented answer (the one-shot answer makes the whole text
    content): calls already sent stand, the open one closed (a streaming value closed, a held
    one dropped); from the byte that breaks the format on (for a call whose name was not sent,
    from its start marker, the group's for the first call) the text is content; a cut group
    drops what was held.
    """

    streams_arguments = True

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.streaming = self.format in ("xml", "xml_typed") and bool(self.markers)
        self.State = K2HorizonStreamedState if self.streaming else HeldState
        self._where, self._back, self._index, self._call, self._keys, self._sent = GROUP, "", 0, "", [], 0
        self._held, self._type, self._raw, self._inked = "", None, False, False

    def _send(self, text: str, out: Delta) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(index=self._index - 1, arguments=text))

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if not self.streaming:
            return super().feed(text, token_ids)
        out = Delta(tool_calls=[])
        self._buf += text
        if self._mode == OPEN:
            out.content = self._stream_content()
        if self._mode == HELD:
            self._read(out)
        elif self._mode == DONE:
            out.content += self._buf
            self._buf = ""
        self._inked = self._inked or bool(out.content.strip())
        return out

    def _read(self, out: Delta) -> None:
        buf, i = self._buf, 0
        while i < len(buf) and self._mode == HELD:
            if self._where == GROUP:
                self._back, self._where, i = GROUP_START, GAP, len(GROUP_START)
                continue
            pos, marker = find_first(buf, _STOPS[self._where], i)
            end = len(buf) if pos == -1 else pos
            if pos == -1:
                end -= partial_suffix(buf[i:], _STOPS[self._where])
            text = buf[i:end]
            if self._where in _BLANK_ONLY and text.strip():
                self._break(buf, i, out)
                return
            self._take(text, out)
            if marker is None:
                i = end
                break
            i = self._marker(marker, buf, pos, out)
        if self._mode == HELD:
            self._buf = buf[i:]

    def _take(self, text: str, out: Delta) -> None:
        if self._where == VALUE and self._raw:
            self._send(encode_basestring(text)[1:-1] if text else "", out)
        elif self._where in (NAME, KEY, TYPE, VALUE):
            self._held += text
        if self._unsent():
            self._back += text

    def _unsent(self) -> bool:
        """Whether the text read now turns to content should the group break: the group's
        until a call is named, a later call's until it is."""
        return not self._call and (not self._index or self._where != GAP)

    def _marker(self, marker: str, buf: str, pos: int, out: Delta) -> int:
        """Act on ``marker`` at ``pos``; the index to read on from (the end once broken)."""
        where, after = self._where, pos + len(marker)
        if marker == GROUP_END:
            if where != GAP or not self._index:
                return self._break(buf, pos, out)
            self._mode, self._buf, self._back = DONE, "", ""
            out.content += buf[after:]
            return len(buf)
        if marker == CALL_START:
            self._where, self._held = NAME, ""
            if self._index:
                self._back = ""
        elif marker in (KEY_START, CALL_END) and where == NAME:
            if not self._open_call(marker, buf, pos, out):
                return len(buf)
        elif marker == KEY_START:
            self._where, self._held = KEY, ""
        elif marker == KEY_END:
            key = self._held.strip()
            if not key or key in self._keys:
                return self._break(buf, pos, out, KEY_START + self._held)
            self._keys.append(key)
            self._where, self._held, self._type = AFTER_KEY, "", None
        elif marker == TYPE_START:
            if self.format == "xml":
                return self._break(buf, pos, out)
            self._where = TYPE
        elif marker == TYPE_END:
            self._where, self._type, self._held = AFTER_TYPE, self._held.strip(), ""
        elif marker == VALUE_START:
            if self.format == "xml_typed" and not self._type:
                return self._break(buf, pos, out)
            self._begin_value(out)
        elif marker == VALUE_END:
            if not self._end_value(out):
                return self._break(buf, pos, out)
        elif marker == CALL_END and where == ARGS:
            self._send("}" if self._sent else "{}", out)
            self._where, self._call, self._keys = GAP, "", []
        else:
            return self._break(buf, pos, out)
        if self._unsent():
            self._back += marker
        return after

    def _open_call(self, marker: str, buf: str, pos: int, out: Delta) -> bool:
        """The name is read: send it if the one-shot answer accepts it, else break."""
        name = self._held.strip()
        try:
            self._tool_name(name)
            if marker == CALL_END and any(m in self._held for m in ARG_MARKERS):
                raise InvalidCall("malformed argument tags")
        except InvalidCall:
            self._break(buf, pos, out)
            return False
        self._index += 1
        self._keys, self._sent, self._back, self._held = [], 0, "", ""
        out.tool_calls.append(ToolCallDelta(index=self._index - 1, name=name, arguments="{}" if marker == CALL_END else ""))
        self._where, self._call = (GAP, "") if marker == CALL_END else (KEY, name)
        return True

    def _begin_value(self, out: Delta) -> None:
        self._where, self._held = VALUE, ""
        key = self._keys[-1]
        self._raw = _streams_raw(self._properties(self._call).get(key), self._type)
        if self._raw:
            self._send(f'{", " if self._sent else "{"}{encode_basestring(key)}: "', out)
            self._sent += 1

    def _end_value(self, out: Delta) -> bool:
        self._where = ARGS
        key = self._keys[-1]
        if self._raw:
            self._send('"', out)
            return True
        try:
            value = json.dumps(_coerce_xml(self._held, self._properties(self._call).get(key), self._type),
                               ensure_ascii=False, allow_nan=False)
        except ValueError:
            return False
        self._send(f'{", " if self._sent else "{"}{encode_basestring(key)}: {value}', out)
        self._sent += 1
        self._held = ""
        return True

    def _close_call(self, out: Delta) -> None:
        """The open call as it stands: a streaming value closed, a held one dropped."""
        if not self._call:
            return
        if self._where == VALUE and self._raw:
            self._send('"', out)
        self._send("}" if self._sent else "{}", out)
        self._call, self._keys = "", []

    def _break(self, buf: str, pos: int, out: Delta, prefix: str = "") -> int:
        """The format broke at ``pos`` (``prefix``: the text read before it that it spoils):
        the rest of the output is content."""
        self._close_call(out)
        out.content += self._back + prefix + buf[pos:]
        self._mode, self._buf, self._back, self._held = DONE, "", "", ""
        return len(buf)

    def finish(self) -> Delta:
        if not self.streaming:
            return super().finish()
        if self._mode == OPEN:
            return super().finish()
        out = Delta(tool_calls=[])
        if self._mode == HELD:  # what the reader holds (a marker the cut left unfinished) is dropped
            self._close_call(out)
            if not self._index:
                out.content += self._back + self._buf
        self._buf, self._back, self._mode = "", "", DONE
        if not self._index and not (self._inked or out.content.strip()) and self.engine:
            self.null_content = True
        return out


K2HorizonToolParser.incremental = K2HorizonStreamedCalls


_K2H_EFFORT = {
    "high": ("<ifm|think>", "</ifm|think>"),
    "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
    "low": ("<ifm|think_faster>", "</ifm|think_faster>"),
}


@reasoning_parser("k2_horizon", family="k2_horizon")
class K2HorizonReasoningParser(WholeTextParser):
    """K2 Horizon: markers by ``reasoning_effort``; without an end marker, reasoning ends at
    ``<ifm|tool_calls>`` or, failing that, everything is content."""

    name = "k2_horizon"

    @staticmethod
    def _markers(ctx: ParseContext) -> tuple[str, str]:
        return _K2H_EFFORT.get(ctx.kwarg("reasoning_effort", "high"), _K2H_EFFORT["high"])

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = cls._markers(ctx)
        return closed_in_prompt(prompt_token_ids, ctx.vocab, (start,), (end, GROUP_START))

    def split(self, text: str) -> tuple[str | None, str | None]:
        start, end = self._markers(self.ctx)
        text = text.removeprefix(start)
        if end in text:
            reasoning, _, content = text.partition(end)
            return reasoning, content or None
        i = text.find(GROUP_START)
        if i != -1:
            return text[:i], text[i:]
        return "", text or None
