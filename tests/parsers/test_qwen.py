"""vLLM's qwen3 family (``families/qwen.py``): the ``granite_thinking_parser`` reasoning rows
against vLLM 0.33's non-streaming ``extract_reasoning`` (synthetic-families tokenizer), and
chunking invariance. Qwen3's own reasoning cases are in ``test_reasoning.py``, its
``qwen3_coder`` tool calls in ``test_tool_xml.py`` and ``test_tool_incremental.py``.

Known gaps: none known for these parsers.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, parser_cls, split, vocab
from tokenbridge.parsers.base import ParseContext


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` (synthetic-families tokenizer,
# markers added as special tokens where the format needs them) ---------------------------------

SYN = "synthetic-families"

REASONING_CASES = [
    # (name, kwargs, vocab folder or None, text, (reasoning, content))
    ("granite_thinking_parser", {}, SYN, "a</think>\n\nb", ("a", "b")),
    ("granite_thinking_parser", {}, SYN, "only", ("only", None)),
    ("granite_thinking_parser", {}, SYN, "a<tool_call>x", ("a", "<tool_call>x")),
    ("granite_thinking_parser", {"force_nonempty_content": True}, SYN, "only", (None, "only")),
    ("granite_thinking_parser", {"force_nonempty_content": True}, SYN, "a</think>\n\n", ("a", None)),
    ("granite_thinking_parser", {"enable_thinking": False}, SYN, "\n\nx</think>", (None, "x</think>")),
    ("granite_thinking", {}, SYN, "日本</think>\né😀", ("日本", "é😀")),
]


def _reasoning_ctx(kwargs: dict, folder: str | None) -> ParseContext:
    if folder is None:
        return ParseContext(chat_template_kwargs=kwargs)
    return ctx(folder, kwargs)


@pytest.mark.parametrize("name,kwargs,folder,text,expected", REASONING_CASES)
def test_reasoning_one_shot_matches_vllm(name, kwargs, folder, text, expected):
    assert parse(name, text, _reasoning_ctx(kwargs, folder)) == expected


@settings(max_examples=100, deadline=None)
@given(case=st.sampled_from(REASONING_CASES), cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_reasoning_any_chunking_accumulates_to_one_shot(case, cuts):
    name, kwargs, folder, text, expected = case
    assert parse(name, text, _reasoning_ctx(kwargs, folder), split(text, cuts)) == expected


@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet="<|>/thinkmo:ucaglpedr \n日", max_size=40), data=st.data())
def test_reasoning_random_text_chunking(text, data):
    name = data.draw(st.sampled_from(['granite_thinking_parser']))
    kw = data.draw(st.sampled_from([{}, {'thinking_mode': 'enabled'}, {'force_nonempty_content': True}]))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=5))
    c = _reasoning_ctx(kw, None)
    assert parse(name, text, c, split(text, cuts)) == parse(name, text, c)


def test_prompt_closes_reasoning():
    v = vocab("qwen3")
    closed = v.encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    c = ctx("qwen3", prompt=closed)
    assert parser_cls("granite_thinking_parser").reasoning_ended_in_prompt(closed, c) is True
    assert parse("granite_thinking_parser", "Hello", c) == (None, "Hello")
