"""Chunking never changes the answer, for every registered parser pair.

Each parser (tool or reasoning) is fed outputs that mix many families' markers, once whole
and then in random chunks with a msgpack snapshot/restore between chunks, through derender's
own composition (``build_choice_parser``). The accumulated content, reasoning and tool calls
must equal the one-shot result.
"""

from __future__ import annotations

from functools import lru_cache

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MODELS
from tokenbridge.config import ServeConfig
from tokenbridge.derender.parsing import build_choice_parser
from tokenbridge.model.context import load_model
from tokenbridge.parsers import registry
from tokenbridge.protocol.openai import ChatCompletionRequest

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "search_web", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}}}},
]
ARGS = '{"city": "Zürich 🌧", "days": 3}'
OUTPUTS = [
    "Plain answer, no markup at all. ✓",
    f"<think>Let me see.</think>\n\nSure.<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {ARGS}}}\n</tool_call>",
    "Checking.</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nZürich\n</parameter>\n</function>\n</tool_call> tail",
    f'[TOOL_CALLS] [{{"name": "get_weather", "arguments": {ARGS}}}]',
    'functools[{"name": "search_web", "arguments": {"query": "vLLM"}}]',
    "[get_weather(city='Zürich', days=3), search_web(query=\"x\")]",
    f'{{"name": "get_weather", "parameters": {ARGS}}}; {{"name": "search_web", "parameters": {{}}}}',
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    f"{ARGS}<|tool_call_end|><|tool_calls_section_end|>",
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Zürich</arg_value></tool_call>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
    f"{ARGS}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    f"<|tool_call|>[{{\"name\": \"get_weather\", \"arguments\": {ARGS}}}]<|/tool_call|>",
    "Reasoning without an end marker… <tool_call>{\"name\": \"get_weather\", \"argu",
]


@lru_cache(maxsize=1)
def _model():
    return load_model(str(MODELS / "qwen3"), max_model_len=8192)


def _request(tool_choice) -> ChatCompletionRequest:
    return ChatCompletionRequest(
        messages=[{"role": "user", "content": "hi"}], tools=TOOLS, tool_choice=tool_choice
    )


def _run(cfg: ServeConfig, req: ChatCompletionRequest, pieces: list[str]):
    model = _model()
    p = build_choice_parser(model, cfg, req, None)
    content, reasoning, calls = "", "", {}
    for i, piece in enumerate([*pieces, None]):
        if i:
            # Continue from a restored snapshot, as a stateless stream does between calls.
            snap = msgspec.msgpack.decode(msgspec.msgpack.encode(p.snapshot()))
            p = build_choice_parser(model, cfg, req, None)
            p.restore(snap)
        d = p.feed(piece, []) if piece is not None else p.finish().delta
        content += d.content
        reasoning += d.reasoning
        for tc in d.tool_calls:
            name, args = calls.get(tc.index, ("", ""))
            calls[tc.index] = (name + (tc.name or ""), args + tc.arguments)
    return content, reasoning, [calls[i] for i in sorted(calls)]


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)]) if b > a] or [""]


registry.load_all()
TOOL_NAMES = sorted(registry.TOOL)
REASONING_NAMES = sorted(registry.REASONING)


@pytest.mark.parametrize("name", TOOL_NAMES)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.sampled_from(OUTPUTS), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_every_tool_parser_is_chunking_invariant(name, text, cuts):
    cfg = ServeConfig(tool_call_parser=name, enable_auto_tool_choice=True)
    req = _request("auto")
    assert _run(cfg, req, _chunks(text, cuts)) == _run(cfg, req, [text])


@pytest.mark.parametrize("name", REASONING_NAMES)
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.sampled_from(OUTPUTS), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_every_reasoning_parser_with_hermes_is_chunking_invariant(name, text, cuts):
    cfg = ServeConfig(reasoning_parser=name, tool_call_parser="hermes", enable_auto_tool_choice=True)
    req = _request("auto")
    assert _run(cfg, req, _chunks(text, cuts)) == _run(cfg, req, [text])
