"""Tool calls written as marker-delimited tags (``<tool_call>``, ``<function=…>``, ``<arg_key>`` …).

vLLM 0.33 parses these families with one declarative engine: a lexer of literal terminals, a
state machine ``(state, terminal) -> (next state, events)``, and per-family argument
converters. Its non-streaming answer is a single pass of that machine, so this module is the
same machine run incrementally: the lexer holds back only a possible partial terminal, a call's
name and raw arguments are held until the call can no longer change (next call start or
``finish``), and content whose fate depends on later text is held back too:

* with tool calls, content is ``strip()``-ed (leading whitespace is held until decided);
* text after the first call is dropped once any call emitted a name (vLLM never re-reads it),
  so it is held until a call succeeds (drop) or the output ends (keep).

Families differ only in data (:class:`Family`): terminals, transitions, converter, flags.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.json import json_member_object
from tokenbridge.parsers.engine.thinking import EITHER_FLAG_DEFAULT_ON, ENABLE_THINKING_DEFAULT_ON
from tokenbridge.parsers.engine.schema import (
    coerce_string,
    schema_types,
)
from tokenbridge.parsers.engine.tags import (
    ARG,
    ARGS,
    BETWEEN,
    CALL_END,
    CALL_START,
    CONTENT,
    HEADER,
    NAME,
    PREAMBLE,
    REASONING,
    REASONING_END,
    REASONING_START,
    TEXT,
    Family,
    Transitions,
    family_parser,
    to,
)


# ── argument converters (raw tag body -> JSON object text) ──────────────────────────────────

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


# ── family table ────────────────────────────────────────────────────────────────────────────


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


# ── the engine ──────────────────────────────────────────────────────────────────────────────


_QWEN_CODER = qwen_coder_family("qwen3_coder")
_GLM_THINKING = glm_family("glm45", thinking=True)
_GLM_PLAIN = glm_family("glm45", thinking=False)

QwenCoderToolParser = tool_parser(
    "qwen3_coder", "qwen3_xml", "qwen_xml", "qwen_coder", "nemotron", "nemotron_nano",
    family="qwen3_coder",
)(family_parser("QwenCoderToolParser", _QWEN_CODER))

# Step-3.5/3.7 differ from Qwen3 only in reasoning handling, not in the tool grammar.
Step3p5ToolParser = tool_parser("step3p5", family="qwen3_coder")(
    family_parser("Step3p5ToolParser", qwen_coder_family("step3p5"))
)

SeedOssToolParser = tool_parser("seed_oss", family="qwen3_coder")(
    family_parser(
        "SeedOssToolParser",
        qwen_coder_family(
            "seed_oss",
            think=("<seed:think>", "</seed:think>"),
            tool=("<seed:tool_call>", "</seed:tool_call>"),
        ),
    )
)

MiMoToolParser = tool_parser("mimo", family="qwen3_coder")(
    family_parser("MiMoToolParser", qwen_coder_family("mimo", arg_converter=verbatim_params))
)

Step5ToolParser = tool_parser("step5", family="qwen3_coder")(
    family_parser(
        "Step5ToolParser",
        qwen_coder_family(
            "step5", strip_content_with_tools=False, drop_ws_content_before_tools=False
        ),
    )
)

def _glm_chooser(ctx: ParseContext) -> Family:
    return _GLM_THINKING if EITHER_FLAG_DEFAULT_ON.of(ctx) else _GLM_PLAIN


GlmToolParser = tool_parser(
    "glm45", "glm47", "glm45_moe", "glm47_moe", "glm", "glm4", family="glm45",
)(family_parser("GlmToolParser", chooser=_glm_chooser))

# Ling3 reuses the GLM-4.7 grammar and its thinking switch unchanged.
Ling3ToolParser = tool_parser("ling3", family="glm45")(
    family_parser("Ling3ToolParser", chooser=_glm_chooser)
)


# ── MiniMax-M2/M3, PLaMo-3, Inkling ─────────────────────────────────────────────────────────

_MINIMAX_PARAM_NAME = (
    r"<\s*parameter\s+name\s*=\s*"
    r"(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^>\s]+))\s*>"
)
_MINIMAX_PARAM = re.compile(
    _MINIMAX_PARAM_NAME + r"(?P<value>.*?)(?:<\s*/\s*parameter\s*>|(?=<\s*parameter\s+name\s*=))",
    re.S,
)
_MINIMAX_PARTIAL = re.compile(_MINIMAX_PARAM_NAME + r"(?P<value>.*)$", re.S)


def _minimax_param_name(m: re.Match) -> str:
    return (m.group("dq") or m.group("sq") or m.group("bare") or "").strip()


def minimax_m2_params(raw: str, partial: bool) -> str:
    """``<parameter name="k">v</parameter>`` (name quoted either way or bare); values are
    inline, so they are kept byte for byte; nameless parameters are skipped."""
    params: dict[str, Any] = {}
    for m in _MINIMAX_PARAM.finditer(raw):
        if _minimax_param_name(m):
            params[_minimax_param_name(m)] = m.group("value")
    if partial:
        m = _MINIMAX_PARTIAL.search(_MINIMAX_PARAM.sub("", raw))
        if m and _minimax_param_name(m):
            params[_minimax_param_name(m)] = m.group("value")
    return json.dumps(params, ensure_ascii=False)


def _invoke_family(
    name: str, ns: str, tool: tuple[str, str], think: tuple[str, str] | None, **flags: Any
) -> Family:
    """MiniMax ``<invoke name="NAME">…</invoke>`` calls inside a tool block; every structural
    tag carries the ``ns`` prefix (empty for M2). M2 also opens a call outside a block and
    swallows a stray block closer; M3's block closer ends the message (later text is dropped)."""
    invokes = ("INVOKE_DQ", "INVOKE_SQ", "INVOKE_BARE")
    m2 = think is not None
    terminals: dict[str, tuple[str, ...]] = {
        "TOOL_START": (tool[0],), "TOOL_END": (tool[1],),
        "INVOKE_DQ": (f'{ns}<invoke name="',), "INVOKE_SQ": (f"{ns}<invoke name='",),
        "INVOKE_BARE": (f"{ns}<invoke name=",), "INVOKE_END": (f"{ns}</invoke>",),
        "NAME_END_DQ": ('">',), "NAME_END_SQ": ("'>",), "NAME_END_BARE": (">",),
    }
    transitions: Transitions = {
        (CONTENT, "TOOL_START"): to(PREAMBLE),
        (ARGS, "INVOKE_END"): to(BETWEEN, CALL_END),
        **{(st, inv): to(NAME, CALL_START) for st in (PREAMBLE, BETWEEN) for inv in invokes},
        **{(NAME, end): to(ARGS) for end in ("NAME_END_DQ", "NAME_END_SQ", "NAME_END_BARE")},
    }
    if m2:
        terminals.update({
            "THINK_START": (think[0],), "THINK_END": (think[1],),
            "PARAM_START": ("<parameter name=",), "PARAM_END": ("</parameter>",),
        })
        transitions.update({
            (REASONING, "THINK_START"): to(REASONING),
            (REASONING, "THINK_END"): to(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): to(CONTENT),
            (REASONING, "TOOL_START"): to(PREAMBLE, REASONING_END),
            (ARGS, "PARAM_START"): to(ARGS, ARG),
            (ARGS, "PARAM_END"): to(ARGS, ARG),
            (PREAMBLE, "TOOL_END"): to(CONTENT),
            (BETWEEN, "TOOL_END"): to(CONTENT),
            (CONTENT, "TOOL_END"): to(CONTENT),
            **{(CONTENT, inv): to(NAME, CALL_START) for inv in invokes},
        })
    else:
        transitions.update({
            (PREAMBLE, "TOOL_END"): to(BETWEEN),
            (BETWEEN, "TOOL_END"): to(BETWEEN),
        })
    return Family(name=name, terminals=terminals, transitions=transitions, tool_args_json=False, **flags)


MINIMAX_M3_NS = "]<]minimax[>["
_M3_ELEMENT_OPEN = MINIMAX_M3_NS + "<"
_M3_ELEMENT_CLOSE = MINIMAX_M3_NS + "</"
_M3_MAX_DEPTH = 128


def _m3_element(text: str, pos: int, depth: int) -> tuple[str, Any, int] | None:
    """The element opening at ``pos`` as (name, value, end), or None when malformed/open.
    A value is the element's text, or its (name, value) children in order."""
    if depth > _M3_MAX_DEPTH:
        return None
    start = pos + len(_M3_ELEMENT_OPEN)
    gt = text.find(">", start)
    if gt <= start:
        return None
    tag = text[start:gt]
    if tag.startswith("/") or not tag.strip():
        return None
    closer = f"{_M3_ELEMENT_CLOSE}{tag}>"
    pos = gt + 1
    texts: list[str] = []
    children: list[tuple[str, Any]] = []
    while True:
        mark = text.find(MINIMAX_M3_NS, pos)
        if mark < 0:
            return None
        texts.append(text[pos:mark])
        if text.startswith(closer, mark):
            pos = mark + len(closer)
            break
        if not text.startswith(_M3_ELEMENT_OPEN, mark):
            return None
        child = _m3_element(text, mark, depth + 1)
        if child is None:
            return None
        children.append(child[:2])
        pos = child[2]
    body = "".join(texts)
    if not children:
        return tag, body, pos
    if body.strip():
        key = "$text"
        while any(k == key for k, _ in children):
            key = "$" + key
        children.append((key, body))
    return tag, children, pos


def _m3_params(raw: str) -> list[tuple[str, Any]]:
    """Top-level parameter elements, up to the first malformed or unterminated one."""
    params: list[tuple[str, Any]] = []
    pos = 0
    while True:
        while pos < len(raw) and raw[pos].isspace():
            pos += 1
        if not raw.startswith(_M3_ELEMENT_OPEN, pos):
            return params
        element = _m3_element(raw, pos, 1)
        if element is None:
            return params
        params.append(element[:2])
        pos = element[2]


def _container(schema: dict) -> tuple[str, dict] | None:
    """The first array/object alternative of ``schema`` as (kind, schema)."""
    types = schema.get("type")
    for kind in ("array", "object"):
        if types == kind or (isinstance(types, list) and kind in types):
            return kind, schema
    if types is None:
        if "items" in schema:
            return "array", schema
        if "properties" in schema or "additionalProperties" in schema:
            return "object", schema
    for key in ("anyOf", "oneOf"):
        for choice in schema.get(key) or ():
            if isinstance(choice, dict):
                found = _container(choice)
                if found:
                    return found
    return None


def _m3_value(value: Any, schema: Any) -> Any:
    schema = schema if isinstance(schema, dict) else None
    container = _container(schema) if schema is not None else None
    if isinstance(value, str):
        if schema is None:
            return value
        types = schema_types(schema)
        if container is not None and "string" not in types and not value.strip():
            return [] if container[0] == "array" else {}
        return coerce_string(value, types)
    if container is not None and container[0] == "array":
        items = container[1].get("items")
        return [_m3_value(child, items) for _, child in value]
    return _m3_object(value, container[1] if container is not None else None)


def _m3_object(elements: list[tuple[str, Any]], schema: dict | None) -> dict:
    """Named elements as an object; a repeated name collects its values into a list."""
    props = (schema or {}).get("properties") or {}
    extra = (schema or {}).get("additionalProperties")
    out: dict[str, Any] = {}
    lists: set[str] = set()
    for key, element in elements:
        value = _m3_value(element, props.get(key, extra))
        if key not in out:
            out[key] = value
        elif key in lists:
            out[key].append(value)
        else:
            out[key] = [out[key], value]
            lists.add(key)
    return out


def minimax_m3_args(raw: str, properties: dict) -> str:
    """``<k>v</k>`` elements (all namespaced) typed by the tool schema; nested elements become
    objects, or arrays where the schema says so (list items render as ``<item>``)."""
    return json.dumps(_m3_object(_m3_params(raw), {"properties": properties or {}}), ensure_ascii=False)


_PLAMO_MARK = "<|plamo:"
_PLAMO_THINK = ("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>")


def plamo3_family(thinking: bool) -> Family:
    """``<|plamo:begin_tool_requests:plamo|>`` blocks of requests, each a name and a JSON
    arguments section; ``<|plamo:tag|>`` (end of turn) closes anything. The reasoning
    markers exist only while thinking is on (``enable_thinking``, default on)."""
    terms = {
        "REQUESTS_START": ("<|plamo:begin_tool_requests:plamo|>",),
        "REQUESTS_END": ("<|plamo:end_tool_requests:plamo|>",),
        "REQUEST_START": ("<|plamo:begin_tool_request:plamo|>",),
        "REQUEST_END": ("<|plamo:end_tool_request:plamo|>",),
        "NAME_START": ("<|plamo:begin_tool_name:plamo|>",),
        "NAME_END": ("<|plamo:end_tool_name:plamo|>",),
        "ARGS_START": ("<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",),
        "ARGS_END": ("<|plamo:end_tool_arguments:plamo|>",),
        "EOT": ("<|plamo:tag|>",),
    }
    trans: Transitions = {
        (CONTENT, "REQUESTS_START"): to(PREAMBLE),
        (PREAMBLE, "REQUEST_START"): to(PREAMBLE),
        (PREAMBLE, "NAME_START"): to(NAME, CALL_START),
        (NAME, "NAME_END"): to(PREAMBLE),
        (PREAMBLE, "ARGS_START"): to(ARGS),
        (ARGS, "ARGS_END"): to(BETWEEN),
        (BETWEEN, "REQUEST_END"): to(PREAMBLE, CALL_END),
        (PREAMBLE, "REQUESTS_END"): to(CONTENT),
        (REASONING, "EOT"): to(CONTENT, REASONING_END),
        **{(st, "EOT"): to(CONTENT) for st in (CONTENT, PREAMBLE, NAME, ARGS, BETWEEN)},
    }
    if thinking:
        terms.update({"THINK_START": (_PLAMO_THINK[0],), "THINK_END": (_PLAMO_THINK[1],)})
        trans.update({
            (REASONING, "THINK_START"): to(REASONING),
            (CONTENT, "THINK_START"): to(REASONING, REASONING_START),
            (REASONING, "THINK_END"): to(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): to(CONTENT),
            (REASONING, "REQUESTS_START"): to(PREAMBLE, REASONING_END),
        })
    return Family(
        name="plamo3",
        terminals=terms,
        transitions=trans,
        tool_args_json=True,
        raw_json_args=True,
        strip_content_with_tools=False,
        preserve_tokens=frozenset({"<|plamo:begin_", "<|plamo:end_", ":plamo|>"}),
        unfinished_marker=_PLAMO_MARK,
    )


def inkling_args(raw: str, partial: bool) -> str:
    """The ``args`` member of the ``{"name": …, "args": {…}}`` body, verbatim (an unclosed
    object runs to the end); ``{}`` without one. A non-object ``args`` is a ValueError."""
    span = json_member_object(raw, "args")
    if span is not None:
        return span
    return "" if partial else "{}"


def inkling_family() -> Family:
    """Typed blocks ``<|message_model|>[header]<|content_KIND|>…<|end_message|>``; a tool block
    (``content_invoke_tool_json``) holds ``{"name": …, "args": {…}}``. Thinking blocks are
    not content, raw/error tool blocks are; text after tool blocks stays content."""
    ends = ("END_MESSAGE", "END_SAMPLING")
    openers_plain = ("TEXT_START", "TOOL_TEXT", "TOOL_ERROR")
    trans: Transitions = {
        (CONTENT, "MSG_MODEL"): to(HEADER),
        (HEADER, "MSG_MODEL"): to(HEADER),
        (CONTENT, "THINK_START"): to(REASONING, REASONING_START),
        (HEADER, "THINK_START"): to(REASONING, REASONING_START),
        (REASONING, "THINK_START"): to(REASONING),
        **{(st, "TOOL_START"): to(ARGS, REASONING_END, CALL_START) for st in (CONTENT, HEADER, REASONING)},
        **{(st, op): to(CONTENT, REASONING_END) for st in (CONTENT, HEADER) for op in openers_plain},
        **{(CONTENT, end): to(CONTENT) for end in ends},
        (REASONING, "END_MESSAGE"): to(CONTENT),
        (REASONING, "END_SAMPLING"): to(CONTENT, REASONING_END),
        **{(ARGS, end): to(CONTENT, CALL_END) for end in ends},
        **{(HEADER, end): to(CONTENT, TEXT) for end in ends},
    }
    return Family(
        name="inkling",
        terminals={
            "MSG_MODEL": ("<|message_model|>",),
            "TEXT_START": ("<|content_text|>",),
            "THINK_START": ("<|content_thinking|>",),
            "END_MESSAGE": ("<|end_message|>",),
            "END_SAMPLING": ("<|content_model_end_sampling|>",),
            "TOOL_START": ("<|content_invoke_tool_json|>",),
            "TOOL_TEXT": ("<|content_invoke_tool_text|>",),
            "TOOL_ERROR": ("<|content_tool_error|>",),
        },
        transitions=trans,
        arg_converter=inkling_args,
        tool_args_json=True,
        strip_content_with_tools=False,
        json_args_keys=("args", "arguments", "parameters"),
        keep_text_after_calls=True,
    )


MinimaxM2ToolParser = tool_parser("minimax_m2", "minimax-m2", "minimax", family="minimax_m2")(
    family_parser(
        "MinimaxM2ToolParser",
        _invoke_family(
            "minimax_m2", "", ("<minimax:tool_call>", "</minimax:tool_call>"),
            ("<think>", "</think>"), arg_converter=minimax_m2_params, validate_tool_names=True,
        ),
    )
)

MinimaxM3ToolParser = tool_parser("minimax_m3", "minimax-m3", family="minimax_m3")(
    family_parser(
        "MinimaxM3ToolParser",
        _invoke_family(
            "minimax_m3", MINIMAX_M3_NS,
            (f"{MINIMAX_M3_NS}<tool_call>", f"{MINIMAX_M3_NS}</tool_call>"), None,
            schema_arg_converter=minimax_m3_args, strip_content_with_tools=False,
        ),
    )
)

_PLAMO3_THINKING, _PLAMO3_PLAIN = plamo3_family(True), plamo3_family(False)

Plamo3ToolParser = tool_parser("plamo3", family="plamo3")(
    family_parser(
        "Plamo3ToolParser",
        chooser=lambda ctx: _PLAMO3_THINKING if ENABLE_THINKING_DEFAULT_ON.of(ctx) else _PLAMO3_PLAIN,
    )
)

InklingToolParser = tool_parser("inkling", family="inkling")(
    family_parser("InklingToolParser", inkling_family())
)
