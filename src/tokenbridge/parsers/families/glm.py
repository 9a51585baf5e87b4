"""GLM-4.5/4.7 (and Ling3, which uses GLM-4.7's grammar and thinking switch unchanged):
``<think>`` reasoning that may reopen, and ``<tool_call>NAME<arg_key>…</arg_key><arg_value>…``
calls whose grammar has reasoning markers only while thinking is on."""

from __future__ import annotations

import json
import re
from typing import Any

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.declare import THINK_TOKENS, CallSpelling, RenderRules, ToolCallGrammar, ToolStrictLevel
from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, register_format
from tokenbridge.parsers.engine.tags import (
    ARG, ARGS, CALL_END, CALL_START, CONTENT, NAME, REASONING, REASONING_END, REASONING_START, Family,
    family_parser, to,
)
from tokenbridge.parsers.engine.tag_stream import GLM_ARGS, streamed_tag_parser
from tokenbridge.parsers.engine.thinking import EITHER_FLAG_DEFAULT_ON
from tokenbridge.parsers.registry import tool_parser


_GLM_ARG = re.compile(r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>", re.S)


_GLM_PARTIAL = re.compile(r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*)$", re.S)


def glm_args(raw: str, partial: bool) -> str:
    """``<arg_key>k</arg_key><arg_value>v</arg_value>`` pairs; keys stripped, values verbatim."""
    params: dict[str, Any] = {}
    for m in _GLM_ARG.finditer(raw):
        params[m.group("key").strip()] = m.group("value")
    if partial:
        m = _GLM_PARTIAL.search(_GLM_ARG.sub("", raw))
        if m and m.group("key").strip():
            params[m.group("key").strip()] = m.group("value")
    return json.dumps(params, ensure_ascii=False)


def glm_family(name: str, thinking: bool) -> Family:
    """``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`` (GLM-4.5/4.7).

    The reasoning markers exist only while thinking is on (``enable_thinking``/``thinking``).
    """
    think_terms = {"THINK_START": ("<think>",), "THINK_END": ("</think>",)} if thinking else {}
    think_trans = (
        {
            (CONTENT, "THINK_START"): to(REASONING, REASONING_START),
            (REASONING, "THINK_END"): to(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): to(CONTENT),
        }
        if thinking
        else {}
    )
    arg_tags = ("ARG_KEY_START", "ARG_KEY_END", "ARG_VALUE_START", "ARG_VALUE_END")
    return Family(
        name=name,
        terminals={
            **think_terms,
            "TOOL_START": ("<tool_call>",), "TOOL_END": ("</tool_call>",),
            "ARG_KEY_START": ("<arg_key>",), "ARG_KEY_END": ("</arg_key>",),
            "ARG_VALUE_START": ("<arg_value>",), "ARG_VALUE_END": ("</arg_value>",),
        },
        transitions={
            **think_trans,
            (REASONING, "THINK_START"): to(REASONING),
            (REASONING, "TOOL_START"): to(NAME, REASONING_END, CALL_START),
            (CONTENT, "TOOL_START"): to(NAME, CALL_START),
            (NAME, "ARG_KEY_START"): to(ARGS, ARG),
            (NAME, "TOOL_END"): to(CONTENT, CALL_END),
            (ARGS, "TOOL_END"): to(CONTENT, CALL_END),
            **{(ARGS, tag): to(ARGS, ARG) for tag in arg_tags},
        },
        arg_converter=glm_args,
        tool_args_json=False,
        validate_tool_names=True,
        strip_name=True,
    )


_GLM_THINKING, _GLM_PLAIN = glm_family("glm45", thinking=True), glm_family("glm45", thinking=False)


def _glm_chooser(ctx: ParseContext) -> Family:
    return _GLM_THINKING if EITHER_FLAG_DEFAULT_ON.of(ctx) else _GLM_PLAIN


_CONTROL_TOKENS = ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")


def _grammar(required_layout: str, forced_layout: str, all_strict: ToolCallGrammar | None = None) -> ToolCallGrammar:
    return ToolCallGrammar(
        spellings=(CallSpelling("<tool_call>", "", "</tool_call>"),),
        arguments="glm_pairs",
        trigger="<tool_call>",
        auto_layout="calls",
        required_layout=required_layout,
        forced_layout=forced_layout,
        text_excludes=tuple(t for t in THINK_TOKENS + _CONTROL_TOKENS if t != "<tool_call>"),
        value_excludes=THINK_TOKENS + _CONTROL_TOKENS,
        all_strict=all_strict,
    )


#: vLLM's structural-tag model ``glm_4_7``; with every tool strict, xgrammar's builtin layout
#: replaces vLLM's shallow one.
GLM_4_7_GRAMMAR = _grammar("list", "list", all_strict=_grammar("triggered", "tag"))

GlmToolParser = tool_parser(
    "glm45", "glm47", "glm45_moe", "glm47_moe", "glm", "glm4", family="glm45",
    render=RenderRules("always", "glm_4_7", "none", ToolStrictLevel.FUNCTION, grammar=GLM_4_7_GRAMMAR),
)(family_parser("GlmToolParser", chooser=_glm_chooser))
GlmToolParser.incremental = streamed_tag_parser(GlmToolParser, GLM_ARGS)

GLM45 = MarkerFormat(
    implicit_end=("<tool_call>",),
    literals=("</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    thinking=EITHER_FLAG_DEFAULT_ON,
    reopen=True,
    turn_boundaries=("<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"),
)
Glm45ReasoningParser = register_format(
    MarkerEngineParser, GLM45, "glm45", "glm47", "glm", "glm_moe_dsa", family="glm45", keeps_special=True
)

# Ling3: GLM's parsers under their own names, without vLLM's GLM request changes.
Ling3ToolParser = tool_parser("ling3", family="glm45")(family_parser("Ling3ToolParser", chooser=_glm_chooser))
Ling3ToolParser.incremental = streamed_tag_parser(Ling3ToolParser, GLM_ARGS)
register_format(MarkerEngineParser, GLM45, "ling3", family="glm45")
