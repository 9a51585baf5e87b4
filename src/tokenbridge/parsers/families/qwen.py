"""Qwen3 and Qwen3-Coder: ``<think>`` reasoning and ``<tool_call><function=…>`` XML tool calls;
the Qwen3-rule reasoning of Nemotron-3 and Granite 4.2 thinking (vLLM's ``qwen3`` family).

The Qwen3-Coder call grammar is shared by the families that write Qwen's XML calls (Step,
Seed-OSS, MiMo); they build theirs with ``qwen_coder_family``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Annotated, Any, Callable

import msgspec

from tokenbridge.parsers.base import ParseContext, ParserState
from tokenbridge.parsers.declare import CallSpelling, RenderRules, triggered_calls
from tokenbridge.parsers.engine.reasoning import EngineState, MarkerEngineParser, MarkerFormat, register_format
from tokenbridge.parsers.engine.tags import (
    ARG, ARGS, BETWEEN, CALL_END, CALL_START, CONTENT, NAME, PREAMBLE, REASONING, REASONING_END, Family,
    family_parser, to,
)
from tokenbridge.parsers.engine.tag_stream import QWEN_PARAMS, streamed_tag_parser
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_ON
from tokenbridge.parsers.registry import reasoning_parser, tool_parser


_QWEN_PARAM = re.compile(
    r"<\s*parameter\s*=\s*([^>]*)>(.*?)(?:<\s*/\s*parameter\s*>|(?=<\s*parameter\s*=))", re.S
)


_QWEN_PARTIAL = re.compile(r"<\s*parameter\s*=\s*([^>]+)>(.*)$", re.S)


def _trim_one_newline(v: str) -> str:
    if v.startswith("\n"):
        v = v[1:]
    if v.endswith("\n"):
        v = v[:-1]
    return v


def _qwen_params(raw: str, partial: bool, value: Callable[[str], str]) -> str:
    params: dict[str, Any] = {}
    for m in _QWEN_PARAM.finditer(raw):
        params[m.group(1)] = value(m.group(2))
    if partial:
        m = _QWEN_PARTIAL.search(_QWEN_PARAM.sub("", raw))
        if m and m.group(1):
            params[m.group(1)] = value(m.group(2))
    return json.dumps(params, ensure_ascii=False)


def qwen_params(raw: str, partial: bool) -> str:
    """``<parameter=k>\\nv\\n</parameter>`` pairs; one wrapping newline is template markup."""
    return _qwen_params(raw, partial, _trim_one_newline)


def verbatim_params(raw: str, partial: bool) -> str:
    """MiMo's compact ``<parameter=k>v</parameter>``: values kept byte for byte."""
    return _qwen_params(raw, partial, lambda v: v)


def qwen_coder_family(
    name: str,
    think: tuple[str, str] = ("<think>", "</think>"),
    tool: tuple[str, str] = ("<tool_call>", "</tool_call>"),
    arg_converter: Callable[[str, bool], str] = qwen_params,
    **flags: Any,
) -> Family:
    """``<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>``."""
    return Family(
        name=name,
        terminals={
            "THINK_START": (think[0],), "THINK_END": (think[1],),
            "TOOL_START": (tool[0],), "TOOL_END": (tool[1],),
            "FUNC_PREFIX": ("<function=",), "FUNC_END": ("</function>",),
            "PARAM_START": ("<parameter=",), "PARAM_END": ("</parameter>",),
            "CLOSE_ANGLE": (">",),
        },
        transitions={
            (REASONING, "THINK_START"): to(REASONING),
            (REASONING, "THINK_END"): to(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): to(CONTENT),
            (REASONING, "TOOL_START"): to(PREAMBLE, REASONING_END, CALL_START),
            (CONTENT, "TOOL_START"): to(PREAMBLE, REASONING_END, CALL_START),
            (CONTENT, "FUNC_PREFIX"): to(NAME, CALL_START),
            (PREAMBLE, "TOOL_END"): to(CONTENT, CALL_END),
            (PREAMBLE, "FUNC_PREFIX"): to(NAME),
            (NAME, "CLOSE_ANGLE"): to(ARGS),
            (NAME, "FUNC_END"): to(BETWEEN, CALL_END),
            (NAME, "TOOL_END"): to(CONTENT, CALL_END),
            (NAME, "TOOL_START"): to(PREAMBLE, CALL_END, CALL_START),
            (NAME, "FUNC_PREFIX"): to(NAME, CALL_END, CALL_START),
            (ARGS, "FUNC_END"): to(BETWEEN, CALL_END),
            (ARGS, "FUNC_PREFIX"): to(NAME, CALL_END, CALL_START),
            (ARGS, "PARAM_START"): to(ARGS, ARG),
            (ARGS, "PARAM_END"): to(ARGS, ARG),
            (BETWEEN, "TOOL_END"): to(CONTENT),
            (BETWEEN, "TOOL_START"): to(PREAMBLE, CALL_START),
            (BETWEEN, "FUNC_PREFIX"): to(NAME, CALL_START),
        },
        arg_converter=arg_converter,
        tool_args_json=False,
        **flags,
    )


#: vLLM's structural-tag model ``qwen_3_coder``.
QWEN_3_CODER_GRAMMAR = triggered_calls(
    CallSpelling("<tool_call>\n<function=", ">\n", "\n</function>\n</tool_call>"),
    "<tool_call>\n<function=",
    "qwen_xml",
)

QwenCoderToolParser = tool_parser(
    "qwen3_coder", "qwen3_xml", "qwen_xml", "qwen_coder", "nemotron", "nemotron_nano",
    family="qwen3_coder",
    render=RenderRules("always", "qwen_3_coder", grammar=QWEN_3_CODER_GRAMMAR),
)(family_parser("QwenCoderToolParser", qwen_coder_family("qwen3_coder")))
QwenCoderToolParser.incremental = streamed_tag_parser(QwenCoderToolParser, QWEN_PARAMS)

QWEN3 = MarkerFormat(
    implicit_end=("<tool_call>",),
    literals=("</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", ">"),
    thinking=ENABLE_THINKING_DEFAULT_ON,
    strip_trailing_whitespace=False,
    turn_boundaries=("<|im_start|>", "<|im_end|>"),
    off_keeps_empty_content=True,
)
Qwen3ReasoningParser = register_format(
    MarkerEngineParser, QWEN3, "qwen3", "qwen3_5", "qwen3-thinking", "qwen3_thinking",
    family="qwen3", keeps_special=True,
)

#: Nemotron-3 and Granite 4.2 thinking: Qwen3's markers, the reasoning's trailing whitespace dropped.
NEMOTRON_V3 = replace(QWEN3, strip_trailing_whitespace=True)


def forces_nonempty_content(ctx: ParseContext) -> bool:
    """``enable_thinking: false`` or ``force_nonempty_content``: a blank content takes the reasoning."""
    kw = ctx.chat_template_kwargs or {}
    return kw.get("enable_thinking") is False or kw.get("force_nonempty_content") is True


class NemotronState(ParserState):
    base: EngineState
    held: Annotated[list[str], msgspec.Meta(min_length=2, max_length=2)] | None  # [reasoning, content]


class NemotronV3ReasoningParser(MarkerEngineParser):
    """Nemotron-3: Qwen3 rules; with ``enable_thinking: false`` or ``force_nonempty_content``
    a blank content swaps places with the reasoning, so both are held until the end."""

    fmt = NEMOTRON_V3
    name = "nemotron_v3"
    State = NemotronState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.force = forces_nonempty_content(ctx)
        self.held: list[str] | None = ["", ""] if self.force else None

    def _route(self, r: str, c: str, final: bool) -> tuple[str, str]:
        if self.held is None:
            return r, c
        self.held[0] += r
        self.held[1] += c
        if self.held[1].strip():
            r, c = self.held
            self.held = None
            return r, c
        if not final:
            return "", ""
        r, c = self.held
        self.held = None
        # The swapped-in reasoning is vLLM's content: verbatim ("" kept) when thinking is
        # off, ``None`` when empty otherwise.
        self.empty_reasoning = None if self.thinking else ""
        return c, r

    def snapshot(self) -> NemotronState:
        return NemotronState(self.state_as(EngineState), self.held)

    def load(self, state: NemotronState) -> None:
        super().load(state.base)
        self.held = state.held


reasoning_parser("nemotron_v3", "nano_v3", "nemotron_3", "nemotron3", family="qwen3", keeps_special=True)(
    NemotronV3ReasoningParser
)




class GraniteThinkingState(ParserState):
    base: EngineState
    content_seen: bool  # raw content (even a newline) arrived: no swap
    content_started: bool  # a non-newline content character arrived
    held: str  # reasoning held while a swap is possible


@reasoning_parser("granite_thinking_parser", "granite_thinking", family="qwen3")
class GraniteThinkingReasoningParser(MarkerEngineParser):
    """Granite 4.2: Nemotron-3 rules; leading newlines of the content are dropped, and with
    ``enable_thinking: false`` or ``force_nonempty_content`` an output that never reached
    content gives its reasoning as the content (so reasoning is held until content starts)."""

    fmt = NEMOTRON_V3
    name = "granite_thinking_parser"
    State = GraniteThinkingState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.force = forces_nonempty_content(ctx)
        self.content_seen = False  # raw content (even a newline) arrived: no swap
        self.content_started = False  # a non-newline content character arrived
        self.held = ""  # reasoning held while a swap is possible

    def _route(self, r: str, c: str, final: bool) -> tuple[str, str]:
        if c:
            self.content_seen = True
        if not self.content_started and c:
            c = c.lstrip("\n")
            self.content_started = bool(c)
        if self.force and self.thinking and not self.content_seen:
            self.held += r
            if not final:
                return "", c
            r, self.held = self.held, ""
            self.empty_reasoning = None
            return "", r
        if self.held:
            r, self.held = self.held + r, ""
        return r, c

    def snapshot(self) -> GraniteThinkingState:
        return GraniteThinkingState(self.state_as(EngineState), self.content_seen, self.content_started, self.held)

    def load(self, state: GraniteThinkingState) -> None:
        super().load(state.base)
        self.content_seen, self.content_started, self.held = state.content_seen, state.content_started, state.held
