"""Moonshot Kimi K2: ``<think>`` reasoning that a tool-call section ends, and its tool calls.

Kimi K2 tool calls: a section of calls whose header is the call id.

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    <|tool_call_argument_begin|>{"city": "Tokyo"}<|tool_call_end|><|tool_calls_section_end|>

The id is the header (``functions.NAME:IDX``), the name its part before ``:`` without
``functions.``. vLLM 0.33 runs this through its declarative parser engine, started in content:
text before the section is content (``</think>`` and unconfigured special tokens dropped when
thinking is on); from the section start on nothing is content again. Each call is complete
at its end marker (or at the end of the output), so it is emitted whole then. Arguments pass
through stripped, except that string values are coerced to the tool schema's declared types
(then the object is re-serialized).
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

import msgspec

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.lexer import special_token_texts
from tokenbridge.parsers.engine.calls import ARGS, BETWEEN, CONTENT, NAME, PREAMBLE, EngineToolParser
from tokenbridge.parsers.engine.json import name_and_args_from_json
from tokenbridge.parsers.engine.thinking import EITHER_FLAG_DEFAULT_ON
from tokenbridge.parsers.engine.schema import fix_arg_types
from tokenbridge.parsers.declare import THINK_TOKENS, CallSpelling, RenderRules, ToolCallGrammar
from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, register_format

THINK_START = "<think>"
THINK_END = "</think>"
SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
CALL_END = "<|tool_call_end|>"
ARG_BEGIN = "<|tool_call_argument_begin|>"

_ID = re.compile(r".+:\d+")
_NAME_KEY = re.compile(r'"name"\s*:\s*"([^"]*)"')

# (state, marker) -> next state; a marker without an entry is text of the state it is in.
_TRANSITIONS: dict[tuple[str, str], str] = {
    (CONTENT, SECTION_BEGIN): PREAMBLE,
    (PREAMBLE, CALL_BEGIN): NAME,
    (PREAMBLE, SECTION_END): PREAMBLE,
    (NAME, ARG_BEGIN): ARGS,
    (ARGS, CALL_END): BETWEEN,
    (ARGS, SECTION_END): PREAMBLE,
    (BETWEEN, CALL_BEGIN): NAME,
    (BETWEEN, SECTION_END): PREAMBLE,
}
_DROP = object()


def _id_and_name(header: str) -> tuple[str, str] | None:
    m = _ID.match(header.strip())
    if not m:
        return None
    call_id = m.group(0).strip()
    name = call_id.split(":")[0].removeprefix("functions.")
    return (call_id, name) if name else None


def resolve_call(header: str, body: str, tools: list[dict] | None) -> tuple[str | None, str, str] | None:
    """``(id, name, arguments)`` of one finished call, or None when vLLM drops it.

    The id is None when vLLM would make one up (derender assigns it).
    """
    call_id: str | None = None
    named = _id_and_name(header)
    if named is None and body:
        # The engine forgets a header it cannot read once arguments arrive and looks for a
        # "name" inside them instead (first as an id-shaped value, then as any name).
        m = _NAME_KEY.search(body)
        found = m.group(1) if m else ""
        named = _id_and_name(found) if found else None
        if named is None and found:
            named = (None, found)
        if named is None:
            name, args = name_and_args_from_json(body)
            if not isinstance(name, str) or not name.strip():
                return None
            return None, name.strip(), fix_arg_types(args, name.strip(), tools)
    if named is None:
        named = (None, header)
    call_id, name = named
    name = name.strip()
    if not name:
        return None
    args = body.strip() or "{}"
    return call_id, name, fix_arg_types(args, name, tools)


class KimiK2State(ParserState):
    _state: Literal["content", "preamble", "name", "args", "between"]
    _pending: str
    _blank: str | None
    _header: str
    _body: str
    _index: Annotated[int, msgspec.Meta(ge=0)]

class KimiK2ToolParser(EngineToolParser):
    """Content until the section starts; then each call whole at its end marker.

    Engine-based in vLLM (so it also runs under ``tool_choice="none"``), and its strict
    structural tags make required/named choices fall back to it.

    It has no incremental variant: ``--tool-call-streaming incremental`` sends its calls whole.
    A stream cannot be exact here because the one-shot answer depends on the end of each call:
    the arguments are the text as written unless some string value coerces to the tool's
    declared type, and then the whole object is re-serialized (separators and escapes change
    in bytes written before that value); a header that is not ``functions.NAME:IDX`` makes
    the engine read the name (and the id) out of the arguments once they are complete.
    """

    State = KimiK2State

    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._markers = {
            m: m for m in (SECTION_BEGIN, SECTION_END, CALL_BEGIN, CALL_END, ARG_BEGIN)
        }
        # ``</think>`` left in content is swallowed only when thinking is on and a reasoning
        # parser is configured (without one, vLLM passes reasoning markup through as text).
        self._drop_think_end = EITHER_FLAG_DEFAULT_ON.of(ctx) and ctx.reasoning_parser is not None
        if EITHER_FLAG_DEFAULT_ON.of(ctx):
            self._markers[THINK_START] = THINK_START
            self._markers[THINK_END] = THINK_END
        for t in special_token_texts(ctx.vocab):
            self._markers.setdefault(t, _DROP)

    # markers ---------------------------------------------------------------------------

    def _marker(self, marker: str, out: Delta) -> None:
        kind = self._markers[marker]
        if kind is _DROP:
            return
        if self._state == CONTENT and marker == THINK_END and self._drop_think_end:
            return
        nxt = _TRANSITIONS.get((self._state, marker))
        if nxt is None:
            self._text(marker, out)
            return
        self._move(nxt, out)

    def _end_call(self, out: Delta) -> None:
        call = resolve_call(self._header, self._body, self.ctx.tools)
        self._header, self._body = "", ""
        if call is None:
            return
        call_id, name, args = call
        out.tool_calls.append(ToolCallDelta(index=self._index, name=name, arguments=args, id=call_id))
        self._index += 1

    # ToolParser ------------------------------------------------------------------------

    def finish(self) -> Delta:
        out = super().finish()
        # Kimi ends outside content in the section preamble (its BETWEEN reads alike).
        self._state = CONTENT if self._state == CONTENT else PREAMBLE
        return out

#: vLLM's structural-tag model ``kimi``.
KIMI_GRAMMAR = ToolCallGrammar(
    spellings=(CallSpelling("<|tool_call_begin|>functions.", ":", "<|tool_call_end|>"),),
    arguments="kimi_indexed_json",
    trigger="<|tool_calls_section_begin|>",
    auto_layout="section",
    required_layout="section_sequence",
    forced_layout="section_sequence",
    text_excludes=THINK_TOKENS + ("<|tool_call_begin|>",),
    section_begin="<|tool_calls_section_begin|>",
    section_end="<|tool_calls_section_end|>",
    arguments_marker="<|tool_call_argument_begin|>",
)
tool_parser(
    "kimi_k2", "kimik2", family="kimi_k2", render=RenderRules("with_tools", "kimi", "none", grammar=KIMI_GRAMMAR)
)(KimiK2ToolParser)
KimiK2ToolParser.name = "kimi_k2"


# Reasoning: the section opener ends it and stays in the content for the tool parser.
KIMI_K2 = MarkerFormat(
    implicit_end=("<|tool_calls_section_begin|>",),
    literals=(
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_end|>",
        "<|tool_call_argument_begin|>",
    ),
    thinking=EITHER_FLAG_DEFAULT_ON,
)


KimiK2ReasoningParser = register_format(
    MarkerEngineParser, KIMI_K2, "kimi_k2", "kimi_k25", "kimi_thinking", family="kimi_k2", keeps_special=True
)
