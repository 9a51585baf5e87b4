"""DeepSeek V3.2 / V4 / V4.1 tool calls in DSML markup (plain text, not special tokens), and
the V4 / V4.1 reasoning rows (their call openers end reasoning).

    <｜DSML｜tool_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">杭州</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜tool_calls>

V3.2 wraps the calls in ``function_calls``; V4 in ``tool_calls`` (``toolcalls`` and ``tool``
seen too); V4.1 writes a space after ``｜DSML｜`` and wraps them in `` calls``. vLLM 0.33 runs
these through its declarative parser engine, started in content: text before the first
wrapper or ``invoke`` is content, and from there on nothing is content again. A call ends at
``</invoke>``, at the wrapper's end, or at the end of the output, and is emitted whole then.
A ``string="true"`` parameter is its raw text; any other value is JSON when it parses, else
its text (``DsmlStreamedCalls`` streams it as written). V4's ``<think>``/``</think>`` are
markup only when a reasoning parser is configured (a ``<think>`` block left in content is
dropped); the tokenizer's unconfigured special tokens are dropped everywhere.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from json.encoder import encode_basestring
from typing import Annotated, Any, ClassVar, Literal

import msgspec

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.lexer import partial_suffix, special_token_texts
from tokenbridge.parsers.engine.calls import ARGS, BETWEEN, CONTENT, NAME, PREAMBLE, EngineToolParser
from tokenbridge.parsers.engine.json import name_and_args_from_json
from tokenbridge.parsers.engine.schema import coerce_value, fix_arg_types, stays_string, tool_properties
from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, register_format
from tokenbridge.parsers.engine.thinking import DEEPSEEK_V4

THINK_START = "<think>"
THINK_END = "</think>"
NAME_END = '">'

# Parser states beyond the engine's own (plain strings keep the snapshot msgpack-able).
REASONING = "reasoning"
_STATES = (CONTENT, REASONING, PREAMBLE, NAME, ARGS, BETWEEN)

# Marker kinds: what a matched marker means to the state machine.
CALLS_START, CALLS_END, INVOKE, INVOKE_NAME_END, INVOKE_END, OPEN_THINK, CLOSE_THINK, TEXT, DROP = (
    "calls_start", "calls_end", "invoke", "name_end", "invoke_end", "think", "/think", "text", "drop",
)

# (state, marker kind) -> next state; a kind without an entry is text of the state it is in.
_TRANSITIONS: dict[tuple[str, str], str] = {
    (CONTENT, OPEN_THINK): REASONING,
    (CONTENT, CLOSE_THINK): CONTENT,
    (REASONING, OPEN_THINK): REASONING,
    (REASONING, CLOSE_THINK): CONTENT,
    (REASONING, CALLS_START): PREAMBLE,
    (CONTENT, CALLS_START): PREAMBLE,
    (CONTENT, INVOKE): NAME,
    (PREAMBLE, INVOKE): NAME,
    (BETWEEN, INVOKE): NAME,
    (NAME, INVOKE_NAME_END): ARGS,
    (ARGS, INVOKE_END): BETWEEN,
    (ARGS, CALLS_END): BETWEEN,
    (BETWEEN, CALLS_END): BETWEEN,
    (BETWEEN, CALLS_START): PREAMBLE,
}
_THINK_KINDS = (OPEN_THINK, CLOSE_THINK)

_NAME_KEY = re.compile(r'"name"\s*:\s*"([^"]*)"')
_WRAPPERS = ("arguments", "input")


@dataclass(frozen=True)
class Dialect:
    """One DSML spelling: the call wrapper, the tag prefix and whether ``<think>`` is markup."""

    calls_start: tuple[str, ...]
    calls_end: str
    tag: str  # "｜DSML｜" or "｜DSML｜ "
    think: bool

    @property
    def param_start(self) -> str:
        return f"<{self.tag}parameter"

    def markers(self) -> dict[str, str]:
        t = self.tag
        kinds = {s: CALLS_START for s in self.calls_start}
        kinds.update({
            self.calls_end: CALLS_END,
            f'<{t}invoke name="': INVOKE,
            NAME_END: INVOKE_NAME_END,
            f"</{t}invoke>": INVOKE_END,
            self.param_start: TEXT,
            f"</{t}parameter>": TEXT,
        })
        if self.think:
            kinds.update({THINK_START: OPEN_THINK, THINK_END: CLOSE_THINK})
        return kinds

    def param_pattern(self) -> re.Pattern[str]:
        """A parameter: name, optional ``string`` flag, value up to its close tag or the next
        parameter (a missing ``string`` flag reads like ``string="false"``)."""
        start = re.escape(self.param_start)
        close = re.escape(f"</{self.tag}parameter>")
        return re.compile(
            rf'{start}\s+name="([^"]+)"(?:\s+string="([^"]*)")?\s*>'
            rf"(.*?)(?:{close}|(?={start}\s+name=))",
            re.DOTALL,
        )


_DSML = "｜DSML｜"
DIALECTS: dict[str, Dialect] = {
    "deepseek_v32": Dialect((f"<{_DSML}function_calls>",), f"</{_DSML}function_calls>", _DSML, False),
    "deepseek_v4": Dialect(
        (f"<{_DSML}tool_calls>", f"<{_DSML}toolcalls>", f"<{_DSML}tool>"),
        f"</{_DSML}tool_calls>",
        _DSML,
        True,
    ),
    "deepseek_v41": Dialect((f"<{_DSML} calls>",), f"</{_DSML} calls>", f"{_DSML} ", True),
}


def dsml_arguments(raw: str, params: re.Pattern[str]) -> str:
    """The JSON object of a call's parameters (later duplicates win)."""
    out: dict[str, Any] = {}
    for m in params.finditer(raw):
        key, is_string, value = m.group(1), m.group(2), m.group(3)
        if is_string == "true":
            out[key] = value
            continue
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return json.dumps(out, ensure_ascii=False)


def is_wrapped(args_json: str) -> bool:
    """Arguments that are only ``{"arguments": …}`` or ``{"input": …}`` (unwrapped by schema)."""
    args = json.loads(args_json)
    return len(args) == 1 and next(iter(args)) in _WRAPPERS


def unwrap_arguments(args_json: str, name: str, tools: list[dict] | None) -> str:
    """``{"arguments": {...}}`` as its inner object when the tool has no such parameter and the
    inner keys are all the tool's parameters (the model sometimes wraps them once more)."""
    if not tools or not name:
        return args_json
    args = json.loads(args_json)
    props = tool_properties(tools, name)
    if not props:
        return args_json
    for wrapper in _WRAPPERS:
        if set(args) != {wrapper} or wrapper in props:
            continue
        inner = args[wrapper]
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                return args_json
        if isinstance(inner, dict) and set(inner) <= set(props):
            return json.dumps(inner, ensure_ascii=False)
    return args_json


class DsmlState(ParserState):
    _state: Literal["content", "reasoning", "preamble", "name", "args", "between"]
    _pending: str
    _blank: str | None
    _header: str
    _body: str
    _index: Annotated[int, msgspec.Meta(ge=0)]
    _wrapped: list[Annotated[list[str], msgspec.Meta(min_length=2, max_length=2)]]

class DsmlToolParser(EngineToolParser):
    """Content until the first call marker; then each call whole at its end.

    Engine-based in vLLM (so it also runs under ``tool_choice="none"``), and its strict
    structural tags make required/named choices fall back to it.
    """

    State = DsmlState

    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True
    dialect: ClassVar[Dialect] = DIALECTS["deepseek_v4"]

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._markers = self.dialect.markers()
        # Without a reasoning parser vLLM passes reasoning markup through as text.
        self._think_is_text = ctx.reasoning_parser is None
        for t in special_token_texts(ctx.vocab):
            self._markers.setdefault(t, DROP)
        self._params = self.dialect.param_pattern()
        # [raw arguments, name] of earlier calls whose arguments are a wrapper object: vLLM
        # unwraps by the name of the first call with the same raw arguments.
        self._wrapped: list[list[str]] = []

    def _marker(self, marker: str, out: Delta) -> None:
        kind = self._markers[marker]
        if kind == DROP:
            return
        nxt = _TRANSITIONS.get((self._state, kind))
        if nxt is None or (kind in _THINK_KINDS and self._think_is_text):
            self._text(marker, out)
            return
        self._move(nxt, out)

    def _end_call(self, out: Delta) -> None:
        call = self._resolve(self._header, self._body)
        self._header, self._body = "", ""
        if call is not None:
            out.tool_calls.append(ToolCallDelta(index=self._index, name=call[0], arguments=call[1]))
            self._index += 1

    def _resolve(self, name: str, raw: str) -> tuple[str, str] | None:
        """``(name, arguments)`` of a finished call, or None when vLLM drops it."""
        tools = self.ctx.tools
        if not name:
            m = _NAME_KEY.search(raw)
            name = m.group(1) if m else ""
        if not name and not raw:
            return None
        converted = dsml_arguments(raw, self._params) if raw.strip() else "{}"
        unwrap_name = name
        if tools and is_wrapped(converted):
            first = next((n for r, n in self._wrapped if r == raw), None)
            if first is None:
                self._wrapped.append([raw, name])
            else:
                unwrap_name = first
        final_name: Any = name.strip()
        if not final_name and raw.strip():
            final_name, args = name_and_args_from_json(raw)
        else:
            args = unwrap_arguments(converted, unwrap_name, tools)
        if not isinstance(final_name, str) or not final_name:
            return None
        return final_name, fix_arg_types(args, final_name, tools)


# Where the streamed call's reader is in its body, and what becomes of the value being read.
GAP, HEADER, VALUE = range(3)
STREAM, HOLD_TEXT, HOLD_JSON = range(3)
# A parameter's header after ``<｜DSML｜parameter``, as ``Dialect.param_pattern`` reads it.
_HEADER = re.compile(r'\s+name="([^"]+)"(?:\s+string="([^"]*)")?\s*>')


def _header_may_follow(text: str) -> bool:
    """Whether more text could still make ``text`` a parameter header (``_HEADER``)."""
    n = len(text)
    i = n - len(text.lstrip())
    if i == n:
        return True
    if i == 0 or not 'name="'.startswith(text[i : i + 6]):
        return False
    if i + 6 >= n:
        return True
    quote = text.find('"', i + 6)
    if quote == -1:
        return True
    if quote == i + 6:
        return False
    j = quote + 1
    k = j + len(text[j:]) - len(text[j:].lstrip())
    if k == n:
        return True
    if k == j or not 'string="'.startswith(text[k : k + 8]):
        return False
    if k + 8 >= n:
        return True
    quote = text.find('"', k + 8)
    return quote == -1 or not text[quote + 1:].strip()


@lru_cache(maxsize=None)
def _value_ends(dialect: Dialect) -> tuple[str, str, re.Pattern[str], re.Pattern[str]]:
    """The parameter open and close tags, where a value ends (its close, or the next parameter
    as ``Dialect.param_pattern``'s lookahead sees it), and a possible such end cut at the text's end."""
    start, close = dialect.param_start, f"</{dialect.tag}parameter>"
    ends = re.compile(rf"{re.escape(close)}|{re.escape(start)}(?=\s+name=)")
    cut = re.compile(rf"{re.escape(start)}(?:\s+(?:n(?:a(?:m(?:e)?)?)?)?)?\Z")
    return start, close, ends, cut


class DsmlStreamedState(ParserState):
    base: DsmlState
    _live: int  # index of the call whose name was sent, -1: none
    _whole: bool  # its arguments are held for the one-shot answer (a wrapper parameter)
    _decided: bool  # its first parameter was read
    _where: Annotated[int, msgspec.Meta(ge=GAP, le=VALUE)]
    _rest: str  # body text not read yet: what may be the start of a tag
    _key: str
    _fate: Annotated[int, msgspec.Meta(ge=STREAM, le=HOLD_JSON)]
    _held: str  # a held value so far, or a parameter header being read
    _sent: Annotated[int, msgspec.Meta(ge=0)]  # parameters sent


class DsmlStreamedCalls(DsmlToolParser):
    """``--tool-call-streaming incremental``: a call opens when its invoke name closes (a blank
    name is decided whole at the call's end, as the one-shot answer names it from the body),
    and each parameter follows when its header is read. A ``string="true"`` value that the
    tool's schema leaves a string streams as it arrives; any other value is held to its end
    and sent as the one-shot answer converts it (JSON or text, then the schema's coercion).

    Held for the one-shot answer: the arguments of a call whose first parameter is
    ``arguments`` or ``input`` (vLLM unwraps such a wrapper by the tool's schema, and by the
    first earlier call with the same raw body). Malformed output, the documented answer: a
    value left open when the call ends is closed if it was streaming and dropped if held (the
    one-shot answer drops it); a repeated parameter is sent again (the one-shot answer keeps
    the last value at the first one's place).
    """

    State = DsmlStreamedState
    streams_arguments = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._tags = _value_ends(self.dialect)
        self._live = -1
        self._reset()

    def _reset(self) -> None:
        self._whole = self._decided = False
        self._where, self._rest, self._key, self._fate, self._held, self._sent = GAP, "", "", STREAM, "", 0

    def _send(self, text: str, out: Delta) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(index=self._live, arguments=text))

    def _move(self, nxt: str, out: Delta) -> None:
        opens = self._state == NAME and nxt == ARGS and bool(self._header.strip())
        super()._move(nxt, out)
        if opens:
            self._live, self._index = self._index, self._index + 1
            self._reset()
            out.tool_calls.append(ToolCallDelta(index=self._live, name=self._header.strip()))

    def _text(self, text: str, out: Delta) -> None:
        if self._state != ARGS or self._live < 0:
            super()._text(text, out)
            return
        if not self._decided or self._whole:
            self._body += text
        if not self._whole:
            self._read(text, out, final=False)

    def _end_call(self, out: Delta) -> None:
        if self._live < 0:
            super()._end_call(out)
            return
        if self._whole:
            self._send(self._resolve(self._header, self._body)[1], out)
        else:
            self._read("", out, final=True)
            if self._where == VALUE and self._fate == STREAM:
                self._send('"', out)
            self._send("}" if self._sent else "{}", out)
        self._header = self._body = ""
        self._live = -1
        self._reset()

    def _read(self, text: str, out: Delta, final: bool) -> None:
        start, close, ends, cut = self._tags
        buf, i = self._rest + text, 0
        self._rest = ""
        while i < len(buf) and not self._whole:
            if self._where == GAP:
                j = buf.find(start, i)
                if j == -1:
                    keep = 0 if final else partial_suffix(buf[i:], (start,))
                    self._rest = buf[len(buf) - keep:]
                    return
                self._where, self._held, i = HEADER, "", j + len(start)
            elif self._where == HEADER:
                header = self._held + buf[i:]
                m = _HEADER.match(header)
                if m is not None:
                    i += m.end() - len(self._held)
                    self._begin(m.group(1), m.group(2), out)
                elif not final and _header_may_follow(header):
                    self._held = header
                    return
                else:  # not a parameter: the scan goes on from the tag's second character
                    self._where, self._held, buf, i = GAP, "", start[1:] + header, 0
            else:
                m = ends.search(buf, i)
                if m is not None:
                    self._value(buf[i:m.start()], out)
                    self._end_value(out)
                    i = m.end() if m.group() == close else m.start()
                    continue
                hold = len(buf)
                if not final:
                    hold -= partial_suffix(buf[i:], (close, start))
                    tail = cut.search(buf, i)
                    hold = min(hold, tail.start()) if tail else hold
                self._value(buf[i:hold], out)
                self._rest = buf[hold:]
                return

    def _begin(self, key: str, flag: str | None, out: Delta) -> None:
        if not self._decided:
            self._decided = True
            if self.ctx.tools and key in _WRAPPERS:
                self._whole = True
                return
            self._body = ""
        name = self._header.strip()
        self._where, self._key, self._held = VALUE, key, ""
        if flag != "true":
            self._fate = HOLD_JSON
        elif stays_string(self.ctx.tools, name, key):
            self._fate = STREAM
            self._send(f'{", " if self._sent else "{"}{encode_basestring(key)}: "', out)
            self._sent += 1
        else:
            self._fate = HOLD_TEXT

    def _value(self, text: str, out: Delta) -> None:
        if self._fate == STREAM:
            self._send(encode_basestring(text)[1:-1] if text else "", out)
        else:
            self._held += text

    def _end_value(self, out: Delta) -> None:
        self._where = GAP
        if self._fate == STREAM:
            self._send('"', out)
            return
        value: Any = self._held
        if self._fate == HOLD_JSON:
            try:
                value = json.loads(value)
            except ValueError:
                pass
        value = coerce_value(value, self.ctx.tools, self._header.strip(), self._key)
        sep = ", " if self._sent else "{"
        self._send(f"{sep}{encode_basestring(self._key)}: {json.dumps(value, ensure_ascii=False)}", out)
        self._sent += 1
        self._held = ""


def _register(name: str, *aliases: str) -> None:
    attrs = {"name": name, "dialect": DIALECTS[name], "__doc__": DsmlToolParser.__doc__}
    cls = type(f"{name.title().replace('_', '')}ToolParser", (DsmlToolParser,), attrs)
    cls.incremental = type(f"{name.title().replace('_', '')}StreamedCalls", (DsmlStreamedCalls,),
                           {**attrs, "__doc__": DsmlStreamedCalls.__doc__})
    tool_parser(name, *aliases, family="deepseek_dsml")(cls)


# Aliases: SGLang / SMG / Dynamo spellings of the same formats (anchors.md §4).
_register("deepseek_v32", "deepseekv32", "deepseek32", "deepseek_v3_2")
_register("deepseek_v4", "deepseekv4", "deepseek-v4")
_register("deepseek_v41")


DEEPSEEK_V4_REASONING = MarkerFormat(
    implicit_end=(f"<{_DSML}tool_calls>", f"<{_DSML}toolcalls>", f"<{_DSML}tool>"),
    literals=(
        f"</{_DSML}tool_calls>",
        f'<{_DSML}invoke name="',
        '">',
        f"</{_DSML}invoke>",
        f"<{_DSML}parameter",
        f"</{_DSML}parameter>",
    ),
    thinking=DEEPSEEK_V4,
    reopen=True,
    off_is_identity=False,
)
DEEPSEEK_V41_REASONING = replace(
    DEEPSEEK_V4_REASONING,
    implicit_end=(f"<{_DSML} calls>",),
    literals=(
        f"</{_DSML} calls>",
        f'<{_DSML} invoke name="',
        '">',
        f"</{_DSML} invoke>",
        f"<{_DSML} parameter",
        f"</{_DSML} parameter>",
    ),
)
register_format(MarkerEngineParser, DEEPSEEK_V4_REASONING, "deepseek_v4", "deepseek-v4", family="deepseek_v4")
register_format(MarkerEngineParser, DEEPSEEK_V41_REASONING, "deepseek_v41", family="deepseek_v4")
