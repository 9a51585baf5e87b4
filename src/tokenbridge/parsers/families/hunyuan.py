"""Hunyuan: V3 / V4 tool calls and reasoning, and Hunyuan-A13B's JSON calls and ``<answer>`` split.

V3 / V4 tool calls: ``<tool_calls><tool_call>name[<tool_sep>]<arg_key>k</arg_key>
<arg_value>v</arg_value>…</tool_call>…</tool_calls>``, every tag optionally carrying the
checkpoint's suffix (``<tool_call:6124c78e>``).

vLLM 0.33:

* ``hy_v3`` (``HYV3ToolParser``): once ``<tool_calls>`` appears, tools count as called even if
  none parse; calls are every ``<tool_call>name<tool_sep>args</tool_call>`` anywhere in the text
  plus one unclosed call after the last ``</tool_call>``; any error drops all calls. Content is
  the text before ``<tool_calls>``. The suffix is the tokenizer config's ``token_suffix``.
* ``hy_v4`` (``HYV4ToolParser``, strict): the first ``<tool_calls>…</tool_calls>`` block must be
  well formed (balanced tags, a name per call, nothing but argument pairs); otherwise the whole
  text is content. The suffix is read from the vocabulary's structural tokens.

Values are typed by the tool schema: boolean, integer, number (float when it has ``.``/``e``),
then JSON for other types, the raw string for strings, else a JSON/Python literal.

Reasoning: V3 splits by R1's rules unless ``reasoning_effort`` is missing or ``no_think``; V4
by R1's rules over its suffixed ``<think…>`` tokens. Hunyuan-A13B's calls are a JSON array in
``<tool_calls>…</tool_calls>``; its reasoning is plain-text ``<think>``/``<answer>`` blocks.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from typing import Any

from tokenbridge.parsers.base import Delta, ParseContext
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.call_list import StreamedCallList
from tokenbridge.parsers.engine.json_calls import CallObject
from tokenbridge.parsers.engine.held import (
    Extraction, HeldBlockParser, JsonFamily, WholeTextParser, as_content, held_calls_parser, random_uuid,
)
from tokenbridge.parsers.engine.json import named_calls
from tokenbridge.parsers.engine.schema import function_tools
from tokenbridge.parsers.engine.reasoning import (
    R1, MarkerFormat, MarkerPartitionParser, SwitchedReasoningParser, closed_in_prompt,
)
from tokenbridge.parsers.engine.thinking import HUNYUAN_V3, HUNYUAN_V4

_TYPE_ALIASES = {
    **dict.fromkeys(("str", "text", "varchar", "char", "enum"), "string"),
    **dict.fromkeys(("bool", "binary"), "boolean"),
    "int": "integer",
    **dict.fromkeys(("float", "double"), "number"),
    "list": "array",
    **dict.fromkeys(("dict", "map"), "object"),
}
_INTEGER_PREFIXES = ("int", "uint", "long", "short", "unsigned")
_NUMBER_PREFIXES = ("num", "float")


def _normalize_type(raw: Any) -> Any:
    exact = _TYPE_ALIASES.get(raw)
    if exact is not None:
        return exact
    low = raw.lower()
    if low.startswith(_INTEGER_PREFIXES):
        return "integer"
    if low.startswith(_NUMBER_PREFIXES):
        return "number"
    return raw


def _arg_schema(tools: list[tuple[Any, Any]], function: str, key: str) -> Any:
    for name, parameters in tools:
        if name == function:
            return {} if parameters is None else parameters.get("properties", {}).get(key, {})
    return {}


def _types(schema: Any) -> set:
    """The schema's non-null types: ``type`` (a list is a union) wins over ``anyOf``/``oneOf``."""
    if "type" in schema:
        t = schema["type"]
        options = [{"type": x} for x in t] if isinstance(t, list) else [schema]
    elif "anyOf" in schema:
        options = schema["anyOf"]
    elif "oneOf" in schema:
        options = schema["oneOf"]
    else:
        options = [{"type": "string"}]
    return {_normalize_type(o.get("type", "string")) for o in options} - {"null"}


def _literal(value: str) -> Any:
    try:
        return json.loads(value)
    except Exception:
        pass
    try:
        return ast.literal_eval(value)
    except Exception:
        return value


def parse_value(value: str, function: str, key: str, tools: list[tuple[Any, Any]]) -> Any:
    types = _types(_arg_schema(tools, function, key))
    if "boolean" in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if "integer" in types:
        try:
            return int(value)
        except (ValueError, TypeError):
            pass
    if "number" in types:
        try:
            return float(value) if ("." in value or "e" in value or "E" in value) else int(value)
        except (ValueError, TypeError):
            pass
    if types - {"string", "boolean", "integer", "number"}:
        try:
            return json.loads(value)
        except ValueError:
            pass
    if "string" in types:
        return value
    return _literal(value)


class _HunyuanTags:
    """The suffixed tag set of one checkpoint."""

    def __init__(self, suffix: str) -> None:
        self.calls_start, self.calls_end = f"<tool_calls{suffix}>", f"</tool_calls{suffix}>"
        self.call_start, self.call_end = f"<tool_call{suffix}>", f"</tool_call{suffix}>"
        self.sep = f"<tool_sep{suffix}>"
        self.key_start, self.key_end = f"<arg_key{suffix}>", f"</arg_key{suffix}>"
        self.value_start, self.value_end = f"<arg_value{suffix}>", f"</arg_value{suffix}>"

    def argument_pattern(self, gap: str) -> re.Pattern[str]:
        """One argument's key and value, with ``gap`` (a pattern) allowed between the two."""
        e = re.escape
        return re.compile(
            f"{e(self.key_start)}(.*?){e(self.key_end)}{gap}{e(self.value_start)}(.*?){e(self.value_end)}", re.S
        )


def _call(name: str, pairs: list[tuple[str, str]], tools: list[tuple[Any, Any]]) -> tuple[str, str]:
    """``(name, arguments)`` from the call's key/value texts, typed by the tool's schema."""
    return name, json.dumps({k: parse_value(v, name, k, tools) for k, v in pairs}, ensure_ascii=False)


@tool_parser("hy_v3", "hunyuan", family="hy_v3")
class HYV3ToolParser(HeldBlockParser):
    """vLLM's ``hy_v3`` tool-call format (SGLang's current ``hunyuan`` detector reads the same)."""

    name = "hy_v3"

    def __init__(self, ctx) -> None:
        config = getattr(ctx.vocab, "config", None)
        suffix = (config.get("token_suffix") if isinstance(config, dict) else None) or ""
        t = self.tags = _HunyuanTags(suffix)
        e = re.escape
        self._call = re.compile(f"{e(t.call_start)}(.*?){e(t.sep)}(.*?){e(t.call_end)}", re.S)
        self._open_call = re.compile(f"{e(t.call_start)}(.*?){e(t.sep)}(.*)", re.S)
        self._pair = t.argument_pattern(r"\s*")
        super().__init__(ctx)

    def stream_markers(self) -> tuple[str, ...]:
        # A call before <tool_calls> still counts, so the text is held from either marker.
        return (self.tags.calls_start, self.tags.call_start)

    def _calls(self, text: str) -> list[tuple[str, str]]:
        found = self._call.findall(text)
        if found:
            found += self._open_call.findall(text.split(self.tags.call_end)[-1])
        else:
            found = self._open_call.findall(text)
        tools = list(function_tools(self.ctx.tools))
        return [_call(name.strip(), self._pair.findall(args.strip()), tools) for name, args in found]

    def extract(self, text: str, at_start: bool) -> Extraction:
        start = text.find(self.tags.calls_start)
        if start == -1:
            return as_content(text)
        try:
            calls = self._calls(text)
        except Exception:
            calls = []
        return Extraction(text[:start] or None, calls)


@tool_parser("hy_v4", family="hy_v4")
class HYV4ToolParser(HeldBlockParser):
    """vLLM's ``hy_v4`` tool-call format (strict: malformed blocks stay content)."""

    name = "hy_v4"
    supports_required_and_named = False

    def __init__(self, ctx) -> None:
        t = self.tags = _HunyuanTags(hy_v4_token_suffix(ctx.vocab))
        e = re.escape
        self._call = re.compile(f"{e(t.call_start)}(.*?){e(t.call_end)}", re.S)
        self._pair = t.argument_pattern("")
        super().__init__(ctx)

    def stream_markers(self) -> tuple[str, ...]:
        # A stray end marker before the start makes the block malformed: hold from either.
        return (self.tags.calls_start, self.tags.calls_end)

    def _calls(self, text: str, start: int) -> list[tuple[str, str]]:
        t = self.tags
        end = text.find(t.calls_end)
        if end < start:
            raise ValueError("tool block not closed")
        block = text[start + len(t.calls_start) : end]
        bodies = self._call.findall(block)
        if not block.count(t.call_start) == block.count(t.call_end) == len(bodies):
            raise ValueError("malformed tool_call tags")
        tools = list(function_tools(self.ctx.tools))
        calls = []
        for body in bodies:
            cut = body.find(t.key_start)
            name, args = (body.strip(), "") if cut == -1 else (body[:cut].strip(), body[cut:].strip())
            if not name:
                raise ValueError("tool call without a name")
            if args.count(t.key_start) != args.count(t.key_end) or args.count(
                t.value_start
            ) != args.count(t.value_end):
                raise ValueError("malformed argument tags")
            if self._pair.sub("", args).strip():
                raise ValueError("text between arguments")
            calls.append(_call(name, self._pair.findall(args), tools))
        if not calls:
            raise ValueError("no tool calls")
        return calls

    def extract(self, text: str, at_start: bool) -> Extraction:
        start = text.find(self.tags.calls_start)
        if start == -1:
            return as_content(text)
        try:
            calls = self._calls(text, start)
        except Exception:
            return as_content(text)
        return Extraction(text[:start] or None, calls)


_HYV4_STRUCTURAL = re.compile(r"<(?:think|tool_calls|tool_call|arg_key|arg_value)(:[^\s>]+)?>")


def hy_v4_token_suffix(vocab: Any) -> str:
    """The checkpoint's suffix of Hunyuan V4 structural tokens (``<think:6124c78e>``), or ``""``."""
    get_vocab = getattr(vocab, "get_vocab", None)
    if get_vocab is None:
        return ""
    for token in get_vocab():
        m = _HYV4_STRUCTURAL.fullmatch(token)
        if m:
            return m.group(1) or ""
    return ""


@reasoning_parser("hy_v3", family="hy_v3")
class HYV3ReasoningParser(SwitchedReasoningParser):
    """Hunyuan V3: R1 rules unless ``reasoning_effort`` is missing or ``no_think``."""

    name = "hy_v3"
    thinking = HUNYUAN_V3


HY_V4 = replace(R1, thinking=HUNYUAN_V4)


@reasoning_parser("hy_v4", family="hy_v4")
class HYV4ReasoningParser(MarkerPartitionParser):
    """Hunyuan V4: R1 rules over ``<think{suffix}>``/``</think{suffix}>``, the suffix read from
    the vocabulary; ``reasoning_effort: no_think`` makes everything content."""

    fmt = HY_V4
    name = "hy_v4"

    def __init__(self, ctx: ParseContext) -> None:
        self.fmt = self.format_for(ctx)
        super().__init__(ctx)

    @staticmethod
    def format_for(ctx: ParseContext) -> MarkerFormat:
        suffix = hy_v4_token_suffix(ctx.vocab)
        return replace(HY_V4, start=(f"<think{suffix}>",), end=(f"</think{suffix}>",))

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        fmt = cls.format_for(ctx)
        if not fmt.thinking.of(ctx):
            return True
        return closed_in_prompt(prompt_token_ids, ctx.vocab, fmt.start, fmt.end)


# -- Hunyuan-A13B -------------------------------------------------------------------------------

A13B_START = "<tool_calls>"
_A13B_BLOCK = re.compile(r"<tool_calls>([\s\S]*?)</tool_calls>")
_THINK_REGION = re.compile(r"<think>(.*?)</think>", re.S)


def extract_hunyuan_a13b(text: str, ctx: ParseContext) -> Extraction:
    """Hunyuan-A13B ``<tool_calls>[…]</tool_calls>``: the first closed block outside a
    ``<think>`` region whose body is valid JSON; its entries with both ``name`` and
    ``arguments`` are calls (others skipped). Content is the text before that block."""
    think = [m.span() for m in _THINK_REGION.finditer(text)]
    for m in _A13B_BLOCK.finditer(text):
        start, end = m.span()
        if any(start > a and end < b for a, b in think):
            continue
        try:
            data = json.loads(m.group(1).strip())
        except Exception:
            continue
        if not isinstance(data, list):
            return as_content(text)
        try:
            calls = named_calls(data)
        except Exception:
            return as_content(text)
        if not calls:
            return as_content(text)
        content = text[:start]
        return Extraction(content if content.strip() else None, calls)
    return as_content(text)


HUNYUAN_A13B = JsonFamily(
    "hunyuan_a13b", extract_hunyuan_a13b, (A13B_START, "<think>"), call_id=lambda index: f"call_{random_uuid()}"
)
HunyuanA13BToolParser = tool_parser("hunyuan_a13b", family="hunyuan_a13b")(held_calls_parser(HUNYUAN_A13B))


class HunyuanA13BStreamedCalls(StreamedCallList):
    """``hunyuan_a13b`` for ``--tool-call-streaming incremental``: content before
    ``<tool_calls>`` streams, then the list's calls (an object's arguments re-serialized, a
    string's kept as its text), each with its ``call_…`` id. Where the one-shot answer skips an
    entry (no name or arguments), passes over a block (inside ``<think>``, not JSON) or makes
    it all content (an unclosed block), the calls sent stand and the rest is dropped."""

    marker = A13B_START
    args_first = '{"'

    def _new_call(self) -> CallObject:
        return CallObject(False, self.args_keys, stop_at_close=True, args_first=self.args_first,
                          args_opts={"raw_string": True})

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = super().feed(text, token_ids)
        for tc in out.tool_calls:
            if tc.name is not None:
                tc.id = HUNYUAN_A13B.call_id(tc.index)
        return out


HunyuanA13BToolParser.incremental = HunyuanA13BStreamedCalls

_A13B_THINK = "<think>\n"
_A13B_ANSWER = "\n</think>\n<answer>\n"
_A13B_ANSWER_END = "\n</answer>"
_A13B_FULL = re.compile(rf"(?:{_A13B_THINK}(.*?){_A13B_ANSWER})?(.*?){_A13B_ANSWER_END}", re.DOTALL)
_A13B_HALF = re.compile(rf"{_A13B_THINK}(.*?){_A13B_ANSWER}(.*)", re.DOTALL)


@reasoning_parser("hunyuan_a13b", family="hunyuan_a13b")
class HunyuanA13BReasoningParser(WholeTextParser):
    """Hunyuan-A13B: ``<think>\\n…\\n</think>\\n<answer>\\n…\\n</answer>``, all plain text.

    A closing ``\\n</answer>`` bounds the content (text after it is dropped) and makes the
    think block optional; without it, a think block followed by ``<answer>`` is needed (the
    content runs to the end), else everything is content.
    """

    name = "hunyuan_a13b"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        # vLLM's check reads its streaming state, which a fresh parser has not left.
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        m = _A13B_FULL.search(text)
        if m:
            reasoning, content = m.group(1) or "", m.group(2)
        else:
            m = _A13B_HALF.search(text)
            if not m:
                return None, text
            reasoning, content = m.groups()
            content = content.removesuffix(_A13B_ANSWER_END)
        return reasoning or None, content or None
