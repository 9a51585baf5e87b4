"""Hunyuan-A13B and Hunyuan V4 (``families/hunyuan.py``): reasoning against vLLM 0.33's
non-streaming ``extract_reasoning`` (run on the installed vLLM, Hunyuan V4 with unsuffixed
``<think>`` tokens), and chunking invariance. The hy_v3/hy_v4 tool calls are in
``test_tool_held_block_families.py``, hunyuan_a13b's in ``test_tool_held_json_families.py``.

Known gaps:
- the tool calls stream whole (no ``--tool-call-streaming incremental`` parser);
- Hunyuan keeps its own argument value conversion, because vLLM's parser converts differently
  (``engine/schema.py``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, parser_cls, split, vocab

QWEN = "qwen3"  # a real tokenizer with ``<think>``/``</think>`` as tokens

REASONING_CASES = [
    # (name, chat_template_kwargs, text, (reasoning, content))
    ('hunyuan_a13b', {}, '<think>\nr\n</think>\n<answer>\nc\n</answer>', ('r', 'c')),
    ('hunyuan_a13b', {}, '<think>\nr\n</think>\n<answer>\nc\n</answer>tail', ('r', 'c')),
    ('hunyuan_a13b', {}, '<think>\nr\n</think>\n<answer>\nc', ('r', 'c')),
    ('hunyuan_a13b', {}, 'just text\n</answer>', (None, 'just text')),
    ('hunyuan_a13b', {}, 'no markers', (None, 'no markers')),
    ('hunyuan_a13b', {}, '<think>\ncut', (None, '<think>\ncut')),
    ('hunyuan_a13b', {}, 'x<think>\nr\n</think>\n<answer>\nc', ('r', 'c')),
    ('hunyuan_a13b', {}, '', (None, '')),
    ('hunyuan_a13b', {}, '<think>\n日本\n</think>\n<answer>\né😀\n</answer>', ('日本', 'é😀')),
    ('hunyuan_a13b', {}, '<think>\na\n</think>\n<answer>\nb\n</think>\n<answer>\nc\n</answer>', ('a', 'b\n</think>\n<answer>\nc')),
    ('hunyuan_a13b', {}, '<think>\n\n</think>\n<answer>\n\n</answer>', (None, None)),
    ('hy_v4', {}, 'r</think>c', ('r', 'c')),
    ('hy_v4', {}, '<think>r</think>c', ('r', 'c')),
    ('hy_v4', {}, 'cut', ('cut', None)),
    ('hy_v4', {}, '', ('', None)),
    ('hy_v4', {}, 'r</think>', ('r', None)),
    ('hy_v4', {}, 'a<tool_calls>x</tool_calls></think>c', ('a<tool_calls>x</tool_calls>', 'c')),
    ('hy_v4', {}, '日本</think>é😀', ('日本', 'é😀')),
    ('hy_v4', {"reasoning_effort": "no_think"}, 'r</think>c', (None, 'r</think>c')),
    ('hy_v4', {"reasoning_effort": "no_think"}, '', (None, '')),
]


@pytest.mark.parametrize("name,kwargs,text,expected", REASONING_CASES)
def test_reasoning_one_shot_matches_vllm(name, kwargs, text, expected):
    assert parse(name, text, ctx(QWEN, kwargs)) == expected


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(REASONING_CASES), cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8))
def test_reasoning_any_chunking_accumulates_to_one_shot(case, cuts):
    name, kwargs, text, expected = case
    assert parse(name, text, ctx(QWEN, kwargs), split(text, cuts)) == expected


@settings(max_examples=75, deadline=None)
@given(text=st.text(alphabet="<>/thinkaswer \n日", max_size=40), data=st.data())
def test_reasoning_random_text_chunking(text, data):
    name = data.draw(st.sampled_from(['hunyuan_a13b', 'hy_v4']))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=5))
    c = ctx(QWEN)
    assert parse(name, text, c, split(text, cuts)) == parse(name, text, c)


def test_hy_v4_prompt_and_switch():
    v = vocab(QWEN)
    start, end = v.token_to_id("<think>"), v.token_to_id("</think>")
    cls = parser_cls("hy_v4")
    assert cls.reasoning_ended_in_prompt([start], ctx(QWEN)) is False
    assert cls.reasoning_ended_in_prompt([start, 5, end], ctx(QWEN)) is True
    assert cls.reasoning_ended_in_prompt([], ctx(QWEN, {"reasoning_effort": "no_think"})) is True
    assert parse("hy_v4", "a</think>b", ctx(QWEN, {"reasoning_effort": "low"})) == ("a", "b")


def test_hunyuan_a13b_prompt_never_ends_reasoning():
    assert parser_cls("hunyuan_a13b").reasoning_ended_in_prompt([1, 2, 3], ctx(QWEN)) is False
