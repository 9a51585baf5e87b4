"""Chunking never changes the answer, for every registered parser pair.

Each parser (tool or reasoning) is fed outputs that mix many families' markers, once whole
and then in random chunks with a msgpack snapshot/restore between chunks, through derender's
own composition (``build_choice_parser``). The accumulated content, reasoning and tool calls
must equal the one-shot result. Every tool parser with an incremental variant is fed the same
way as a ``--tool-call-streaming incremental`` stream: every chunking accumulates to the same
answer, and for the outputs that are well-formed calls of its family (``WELL_FORMED``) to the
one-shot answer.
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
    '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Zürich 🌧</parameter>\n'
    '<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>',
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
    f"{ARGS}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    f'Sure.<longcat_tool_call>{{"name": "search_web", "arguments": {{"query": "a\\"b"}}}}</longcat_tool_call>',
    "<seed:tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</seed:tool_call>",
    f'Sure <function_call> {{"name": "get_weather", "arguments": {ARGS}}} x <function_call>{{"name": "search_web", '
    '"arguments": {}}',
    "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>get_weather"
    "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
    f"{ARGS}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>",
    "<|message_model|><|content_text|>Sure.<|end_message|><|message_model|><|content_invoke_tool_json|>"
    f'{{"name": "get_weather", "args": {ARGS}}}<|end_message|>',
    f'Sure.<tool_calls>[{{"name": "get_weather", "arguments": {ARGS}}}]</tool_calls>',
    f'Let me check.<|action_start|><|plugin|>{{"name": "get_weather", "parameters": {ARGS}}}<|action_end|>',
    "Sure. <|tool_call_start|>[get_weather(city='Zürich 🌧', days=3)]<|tool_call_end|> Checking.",
    "get_weather(city='Zürich 🌧', days=3)\nsearch_web(query=\"x\")\n",
    "Sure. <start_function_call>call:get_weather{city:<escape>Zürich 🌧<escape>,days:<escape>3<escape>}"
    "<end_function_call>",
    'Sure.<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather">'
    '<steptml:parameter name="city">Zürich 🌧</steptml:parameter><steptml:parameter name="days">3'
    "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
    *(f'Sure.\n<｜DSML｜{w}>\n<｜DSML｜{t}invoke name="get_weather">\n<｜DSML｜{t}parameter name="city" string="true">'
      f'Zürich 🌧</｜DSML｜{t}parameter>\n<｜DSML｜{t}parameter name="days" string="false">3</｜DSML｜{t}parameter>\n'
      f"</｜DSML｜{t}invoke>\n</｜DSML｜{w}>"
      for w, t in (("function_calls", ""), ("tool_calls", ""), (" calls", " "))),
    f'Sure.<|message_sep|>\n\nfunction call<|role_sep|>\n{{"name": "get_weather", "arguments": {ARGS}}}</s>',
    f'Sure. <|tools_prefix|>[{{"get_weather": {ARGS}}}, {{"search_web": {{"query": "x"}}}}]<|tools_suffix|> ok',
    'Sure. <dots_function_call>\n<invoke name="get_weather">\n<parameter name="city">Zürich 🌧</parameter>\n'
    '<parameter name="days">3</parameter>\n</invoke>\n</dots_function_call>',
    f'[{{"name": "get_weather", "arguments": {ARGS}}}, {{"name": "search_web", "arguments": "raw"}}]',
    '<|START_THINKING|>Plan.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
    f'"parameters": {ARGS}}}\n]<|END_ACTION|>',
    "<|start|>assistant to=user<|message|>Sure.<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>"
    '<atem:invoke name="get_weather"><atem:parameter name="city">Zürich 🌧</atem:parameter>'
    '<atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls><|eom|>',
    "Sure.]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name=\"get_weather\">\n]<]minimax[>[<city>Zürich 🌧"
    "]<]minimax[>[</city>\n]<]minimax[>[<days>3]<]minimax[>[</days>\n]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
    'Hi<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Zürich 🌧<|close|>argument<|sep|><|open|>argument key="days" '
    'type="integer"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
    "Sure.<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Zürich 🌧"
    "</ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_value>3</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
    'Sure. <|tool_call>call:get_weather{city:<|"|>Zürich 🌧<|"|>,days:3}<tool_call|>',
]
#: The parsers each output is a well-formed tool-call output of ("*": it has no markup at all).
WELL_FORMED = {
    0: {"*"}, 1: {"hermes", "granite4", "ernie45"}, 2: {"qwen3_coder", "step3p5", "step5", "mimo"}, 3: {"mistral"}, 4: {"phi4_mini_json"},
    6: {"llama3_json"},
    8: {"glm45", "ling3", "poolside_v1"}, 9: {"deepseek_v3"}, 10: {"granite"}, 12: {"minimax_m2"}, 13: {"deepseek_v31"}, 14: {"longcat"},
    5: {"pythonic", "llama4_pythonic"}, 15: {"seed_oss"}, 16: {"granite-20b-fc"}, 17: {"plamo3"},
    18: {"inkling"}, 19: {"jamba", "hunyuan_a13b"}, 20: {"internlm", "interns1"}, 21: {"lfm2"}, 22: {"olmo3"}, 23: {"functiongemma"}, 24: {"step3"},
    25: {"deepseek_v32"}, 26: {"deepseek_v4"}, 27: {"deepseek_v41"},
    28: {"gigachat3"}, 29: {"apertus"}, 30: {"dots"}, 31: {"xlam"},
    32: {"cohere", "cohere_command3", "cohere_command4"}, 33: {"muse", "muse_glimmer"},
    34: {"minimax_m3"}, 35: {"kimi_k3"}, 36: {"k2_horizon"}, 37: {"gemma4"},
}


@lru_cache(maxsize=1)
def _model():
    return load_model(str(MODELS / "qwen3"), max_model_len=8192)


def _request(tool_choice) -> ChatCompletionRequest:
    return ChatCompletionRequest(
        messages=[{"role": "user", "content": "hi"}], tools=TOOLS, tool_choice=tool_choice
    )


def _run(cfg: ServeConfig, req: ChatCompletionRequest, pieces: list[str], streaming: bool = False):
    model = _model()
    p = build_choice_parser(model, cfg, req, None, streaming)
    content, reasoning, calls = "", "", {}
    for i, piece in enumerate([*pieces, None]):
        if i:
            # Continue from a restored snapshot, as a stateless stream does between calls.
            snap = msgspec.msgpack.decode(msgspec.msgpack.encode(p.snapshot()))
            p = build_choice_parser(model, cfg, req, None, streaming)
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


INCREMENTAL_NAMES = [n for n in TOOL_NAMES if registry.get_tool_parser(n).incremental is not None]


#: Families parsed from token ids of their own tokenizer, tested with it elsewhere.
BY_TOKEN_IDS = {"openai": "tests/parsers/test_harmony.py"}


def test_every_incremental_family_has_a_well_formed_output():
    assert set(INCREMENTAL_NAMES) - set(BY_TOKEN_IDS) <= set().union(*WELL_FORMED.values())


@pytest.mark.parametrize("name", INCREMENTAL_NAMES)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(0, len(OUTPUTS) - 1), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_every_incremental_tool_parser_is_chunking_invariant(name, k, cuts):
    cfg = ServeConfig(tool_call_parser=name, enable_auto_tool_choice=True, tool_call_streaming="incremental")
    req = _request("auto")
    text = OUTPUTS[k]
    whole = _run(cfg, req, [text], streaming=True)
    assert _run(cfg, req, _chunks(text, cuts), streaming=True) == whole
    assert _run(cfg, req, list(text), streaming=True) == whole
    if WELL_FORMED.get(k, set()) & {name, "*"}:
        assert whole == _run(cfg, req, [text])


@pytest.mark.parametrize("name", REASONING_NAMES)
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.sampled_from(OUTPUTS), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_every_reasoning_parser_with_hermes_is_chunking_invariant(name, text, cuts):
    cfg = ServeConfig(reasoning_parser=name, tool_call_parser="hermes", enable_auto_tool_choice=True)
    req = _request("auto")
    assert _run(cfg, req, _chunks(text, cuts)) == _run(cfg, req, [text])
