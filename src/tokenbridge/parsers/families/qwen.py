"""Qwen3 and Qwen3-Coder: ``<think>`` reasoning and ``<tool_call><function=…>`` XML tool calls.

The Qwen3-Coder call grammar is shared by the families that write Qwen's XML calls (Step,
Seed-OSS, MiMo); they build theirs with ``qwen_coder_family``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from tokenbridge.parsers.declare import CallSpelling, RenderRules, triggered_calls
from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, register_format
from tokenbridge.parsers.engine.tags import (
    ARG, ARGS, BETWEEN, CALL_END, CALL_START, CONTENT, NAME, PREAMBLE, REASONING, REASONING_END, Family,
    family_parser, to,
)
from tokenbridge.parsers.engine.tag_stream import QWEN_PARAMS, streamed_tag_parser
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_ON
from tokenbridge.parsers.registry import tool_parser


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
)
Qwen3ReasoningParser = register_format(
    MarkerEngineParser, QWEN3, "qwen3", "qwen3_5", "qwen3-thinking", "qwen3_thinking",
    family="qwen3", keeps_special=True,
)
