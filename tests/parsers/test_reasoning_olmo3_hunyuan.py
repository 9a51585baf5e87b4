"""Reasoning of Olmo 3, Hunyuan-A13B, Hunyuan V4.

Expected values are vLLM 0.33's non-streaming ``extract_reasoning`` for the same text, produced
by running the installed vLLM parsers (Hunyuan V4 with unsuffixed ``<think>`` tokens).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.parsers.test_reasoning import ctx, parse, parser_cls, vocab

QWEN = "qwen3"  # a real tokenizer with ``<think>``/``</think>`` as tokens

CASES = [
    # (name, chat_template_kwargs, text, (reasoning, content))
    ('olmo3', {}, '<think>a</think>b', ('a', 'b')),
    ('olmo3', {}, 'a</think>b', ('a', 'b')),
    ('olmo3', {}, 'no end marker', (None, 'no end marker')),
    ('olmo3', {}, '', (None, '')),
    ('olmo3', {}, 'x<think>a</think>b', ('x<think>a', 'b')),
    ('olmo3', {}, '<think></think>', (None, None)),
    ('olmo3', {}, 'a</think>b</think>c', ('a', 'b</think>c')),
    ('olmo3', {}, 'a<tool_call>x</tool_call></think>b', ('a<tool_call>x</tool_call>', 'b')),
    ('olmo3', {}, '日本</think>é😀', ('日本', 'é😀')),
    ('olmo3', {}, '<think>cut', (None, '<think>cut')),
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


@pytest.mark.parametrize("name,kwargs,text,expected", CASES)
def test_one_shot_matches_vllm(name, kwargs, text, expected):
    assert parse(name, text, ctx(QWEN, kwargs)) == expected


@settings(max_examples=300, deadline=None)
@given(
    case=st.sampled_from(CASES),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8),
)
def test_any_chunking_accumulates_to_one_shot(case, cuts):
    name, kwargs, text, expected = case
    pts = sorted({min(x, len(text)) for x in cuts})
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    assert parse(name, text, ctx(QWEN, kwargs), chunks) == expected


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="<>/thinkaswer \n日", max_size=40), data=st.data())
def test_random_text_chunking(text, data):
    name = data.draw(st.sampled_from(["olmo3", "hunyuan_a13b", "hy_v4"]))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=5))
    pts = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    c = ctx(QWEN)
    assert parse(name, text, c, chunks) == parse(name, text, c)


def test_olmo3_prompt_end_marker_as_text_pieces():
    """Olmo 3 spots ``</think>`` in the prompt by its pieces ``</`` ``think`` ``>``."""
    v = vocab(QWEN)
    ids = [v.token_to_id(t) for t in ("</", "think", ">")]
    assert None not in ids
    c = ctx(QWEN)
    cls = parser_cls("olmo3")
    assert cls.reasoning_ended_in_prompt([7, *ids, 9], c) is True
    assert cls.reasoning_ended_in_prompt([7, *ids[:2]], c) is False
    # The text split does not depend on the prompt.
    assert parse("olmo3", "a</think>b", ctx(QWEN, prompt=[*ids])) == ("a", "b")


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
