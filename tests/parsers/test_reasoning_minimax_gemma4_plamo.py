"""Reasoning of MiniMax-M2/M3, Gemma-4, Granite 4.2 thinking, PLaMo-3.

Expected values are vLLM 0.33's non-streaming ``extract_reasoning`` for the same text (checked
against the installed vLLM with the synthetic-families tokenizer, Gemma-4/M3 markers added
as special tokens where the format needs them).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.parsers.test_reasoning import ctx, parse
from tokenbridge.parsers.base import ParseContext

SYN = "synthetic-families"
TC = '<minimax:tool_call><invoke name="f">x</invoke></minimax:tool_call>'

CASES = [
    # (name, kwargs, vocab folder or None, text, (reasoning, content))
    ("minimax_m2", {}, SYN, "a</think>b", ("a", "b")),
    ("minimax_m2", {}, SYN, "cut by length", ("cut by length", None)),
    ("minimax_m2", {}, SYN, "a \n" + TC + "z</minimax:tool_call>", ("a", TC + "z")),
    ("minimax_m2", {}, SYN, 'a</think>b</minimax:tool_call>c<invoke name="x"></minimax:tool_call>',
     ("a", 'bc<invoke name="x"></minimax:tool_call>')),
    ("minimax", {}, SYN, "<think>日本</think>é😀", ("日本", "é😀")),
    ("minimax_m3", {}, SYN, "", (None, "")),
    ("minimax_m3", {}, SYN, "plain", (None, "plain")),
    ("minimax_m3", {}, SYN, "</mm:think>x", (None, "x")),
    ("minimax_m3", {}, SYN, "a<mm:think>b</mm:think>c", ("b", "ac")),
    ("minimax_m3", {}, SYN, "a<mm:think>b", ("b", "a")),
    ("minimax_m3", {}, SYN, "<mm:think></mm:think>", ("", None)),
    ("minimax_m3", {}, SYN, "r</mm:think>c", (None, "r</mm:think>c")),
    ("minimax_m3", {"thinking_mode": "enabled"}, SYN, "", ("", None)),
    ("minimax_m3", {"thinking_mode": "enabled"}, SYN, "r</mm:think>c</mm:think>d", ("r", "c</mm:think>d")),
    ("minimax_m3", {"thinking_mode": "enabled"}, SYN, "cut", ("cut", None)),
    ("minimax-m3", {"thinking_mode": "enabled"}, SYN, "日本<mm:think>é</mm:think>😀", ("é", "日本😀")),
    # Gemma-4 with a tokenizer that has its channel tokens (vocab None: no special drops).
    ("gemma4", {}, None, "<|channel>thought\nhm<channel|>ok", ("hm", "ok")),
    ("gemma4", {}, None, "thought\nhm<channel|>ok", ("hm", "ok")),
    ("gemma4", {}, None, "hm<channel|>ok", ("hm", "ok")),
    ("gemma4", {}, None, "plain", (None, "plain")),
    ("gemma4", {}, None, "thought", (None, None)),
    ("gemma4", {}, None, "<|channel>thought", (None, None)),
    ("gemma4", {}, None, "<|channel>thought\ncut by length", ("cut by length", None)),
    ("gemma4", {}, None, "<|channel>thought\na<|tool_call>call:f{}<tool_call|>b<tool_call|>",
     ("a", "<|tool_call>call:f{}<tool_call|>b")),
    ("gemma4", {}, None, "x<channel|>y<|channel>thought\nz<channel|>w", ("z", "xyw")),
    ("gemma4", {}, None, "a<tool_call|>b", (None, "ab")),
    ("gemma4", {}, None, "<|channel>thought\n日本<channel|>é😀", ("日本", "é😀")),
    # Without the channel tokens in the tokenizer vLLM never prepends the opener.
    ("gemma4", {}, SYN, "thought\nhm<channel|>ok", (None, "thought\nhmok")),
    ("granite_thinking_parser", {}, SYN, "a</think>\n\nb", ("a", "b")),
    ("granite_thinking_parser", {}, SYN, "only", ("only", None)),
    ("granite_thinking_parser", {}, SYN, "a<tool_call>x", ("a", "<tool_call>x")),
    ("granite_thinking_parser", {"force_nonempty_content": True}, SYN, "only", (None, "only")),
    ("granite_thinking_parser", {"force_nonempty_content": True}, SYN, "a</think>\n\n", ("a", None)),
    ("granite_thinking_parser", {"enable_thinking": False}, SYN, "\n\nx</think>", (None, "x</think>")),
    ("granite_thinking", {}, SYN, "日本</think>\né😀", ("日本", "é😀")),
    ("plamo3", {}, SYN, "a<|plamo:end_think:plamo|>b", ("a", "b")),
    ("plamo3", {}, SYN, "a<|plamo:tag|>b", ("a", "b")),
    ("plamo3", {}, SYN, "abc<|plamo:begin_tool", ("abc", None)),
    ("plamo3", {}, SYN, "x<|plamo:begin_tool_requests:plamo|>y<|plamo:tag|>z"
     "<|plamo:end_tool_requests:plamo|>w<|plamo:tag|>q",
     ("x", "<|plamo:begin_tool_requests:plamo|>y<|plamo:tag|>z<|plamo:end_tool_requests:plamo|>wq")),
    ("plamo3", {}, SYN, "r<|plamo:end_think:plamo|>c<|plamo:begin_think:plamo|>d", ("rd", "c")),
    ("plamo3", {"enable_thinking": False}, SYN, "r<|plamo:end_think:plamo|>c<|plamo:tag|>",
     (None, "r<|plamo:end_think:plamo|>c")),
    ("plamo3", {}, SYN, "日本  <|plamo:end_think:plamo|>é", ("日本  ", "é")),
]


def _ctx(kwargs: dict, folder: str | None) -> ParseContext:
    if folder is None:
        return ParseContext(chat_template_kwargs=kwargs)
    return ctx(folder, kwargs)


@pytest.mark.parametrize("name,kwargs,folder,text,expected", CASES)
def test_one_shot_matches_vllm(name, kwargs, folder, text, expected):
    assert parse(name, text, _ctx(kwargs, folder)) == expected


@settings(max_examples=400, deadline=None)
@given(
    case=st.sampled_from(CASES),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_any_chunking_accumulates_to_one_shot(case, cuts):
    name, kwargs, folder, text, expected = case
    pts = sorted({min(x, len(text)) for x in cuts})
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    assert parse(name, text, _ctx(kwargs, folder), chunks) == expected


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="<|>/thinkmo:ucaglpedr \n日", max_size=40), data=st.data())
def test_random_text_chunking(text, data):
    name = data.draw(st.sampled_from(["minimax_m2", "minimax_m3", "gemma4", "granite_thinking_parser", "plamo3"]))
    kw = data.draw(st.sampled_from([{}, {"thinking_mode": "enabled"}, {"force_nonempty_content": True}]))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=5))
    pts = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    c = _ctx(kw, None)
    assert parse(name, text, c, chunks) == parse(name, text, c)


def test_prompt_closes_reasoning():
    from tests.parsers.test_reasoning import parser_cls, vocab

    v = vocab("qwen3")
    closed = v.encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    c = ctx("qwen3", prompt=closed)
    assert parser_cls("granite_thinking_parser").reasoning_ended_in_prompt(closed, c) is True
    assert parse("granite_thinking_parser", "Hello", c) == (None, "Hello")
    assert parser_cls("gemma4").reasoning_ended_in_prompt([], ctx(SYN)) is True
    assert parser_cls("gemma4").reasoning_ended_in_prompt([], ctx(SYN, {"enable_thinking": True})) is False
    assert parser_cls("plamo3").reasoning_ended_in_prompt([], ctx(SYN, {"enable_thinking": False})) is True
