"""Olmo 3 (``families/olmo3.py``): reasoning against vLLM 0.33's non-streaming
``extract_reasoning`` (run on the installed vLLM with Qwen3's real tokenizer), and chunking
invariance. Its tool calls are the pythonic ``olmo3`` variant (``test_pythonic.py``).

Known gaps:
- its tool calls stream whole (``pythonic`` has no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, parser_cls, split, vocab

QWEN = "qwen3"  # a real tokenizer with ``<think>``/``</think>`` as tokens

REASONING_CASES = [
    # (name, chat_template_kwargs, text, (reasoning, content))
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
    name = data.draw(st.sampled_from(['olmo3']))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=5))
    c = ctx(QWEN)
    assert parse(name, text, c, split(text, cuts)) == parse(name, text, c)


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
