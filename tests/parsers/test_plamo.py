"""PLaMo-3 (``families/plamo.py``): tool calls and reasoning against vLLM 0.33's non-streaming
answers, and chunking invariance.

Tool expected values were produced by running vLLM's own parser classes (``extract_tool_calls``)
on plain text (markers are text), and also with the real Qwen3 tokenizer, whose ids decide the
truncated-marker cut.

Known gaps:
- the incremental stream sends argument values as written where the one-shot answer
  re-serializes what the tool's schema coerces (the incremental stream's tests below).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_families import VOCAB, assert_engine_based, assert_random_chunking_is_one_shot, one
from feeding import ctx, parser_cls, split
from incremental import OBJECTS, WS, incremental, whole
from reasoning_cases import reasoning_tests


# ── PLaMo-3 ─────────────────────────────────────────────────────────────────────────────────

P_REQS = ("<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>")
P_ARGS = "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"


def preq(fn: str, args: str) -> str:
    return (
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>" + fn
        + "<|plamo:end_tool_name:plamo|>" + P_ARGS + args
        + "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
    )


def plamo(*reqs: str) -> str:
    return P_REQS[0] + "".join(reqs) + P_REQS[1]


# ── Inkling ─────────────────────────────────────────────────────────────────────────────────

# (parser, output text, expected content, expected calls)
CASES = [
    # PLaMo-3
    ("plamo3", "Plain answer.", "Plain answer.", []),
    ("plamo3", plamo(preq("get_weather", '{"city": "Paris", "days": "3"}')), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("plamo3", "Checking. " + plamo(preq("search", '{"q": "a"}'), preq("search", '{"q": "日本"}'))
     + " done", "Checking. ", [("search", '{"q": "a"}'), ("search", '{"q": "日本"}')]),
    ("plamo3", plamo(preq("search", "{not json")), None, [("search", "{not json")]),
    ("plamo3", plamo(preq("nope", "{}")), None, [("nope", "{}")]),
    ("plamo3", P_REQS[0] + "<|plamo:begin_tool_name:plamo|>search<|plamo:end_tool_name:plamo|>"
     + P_ARGS + '{"q": "x"}<|plamo:end_tool_argu', None, [("search", '{"q": "x"}')]),
    ("plamo3", P_REQS[0] + "<|plamo:begin_tool_name:plamo|>search<|plamo:end_tool_na", None,
     [("search", "{}")]),
    ("plamo3", "Hello <|plamo:begin_tool_req", "Hello ", []),
    ("plamo3", "a<|plamo:tag|>b", "ab", []),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert one(name, text) == (content, calls)


def test_tool_choice_none_keeps_text_and_drops_calls():
    assert one("plamo3", " a " + plamo(preq("search", "{}")) + " b", tool_choice="none") == (
        " a  b", [])


def test_reasoning_markup_with_and_without_reasoning_parser():
    think = "<|plamo:begin_think:plamo|>r<|plamo:end_think:plamo|>A"
    assert one("plamo3", think) == ("A", [])
    off = one("plamo3", think, chat_template_kwargs={"enable_thinking": False})
    assert off == (think, [])


def test_plamo_marker_cut_uses_token_ids():
    # with a tokenizer the cut needs the tail's ids to prefix a marker's ids (Qwen3's BPE
    # splits these differently, so nothing is cut); without one, a text prefix is enough
    text = "Hello <|plamo:begin_tool_req"
    assert one("plamo3", text, vocab=VOCAB) == (text, [])
    assert one("plamo3", "Hello <|plamo:beg", vocab=VOCAB) == ("Hello <|plamo:beg", [])
    assert one("plamo3", "Hello <|plamo:beg") == ("Hello ", [])


def test_names_and_flags():
    assert_engine_based(('plamo3',))


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_random_chunkings_accumulate_to_one_shot(data):
    assert_random_chunking_is_one_shot(data, CASES)


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` (synthetic-families tokenizer,
# markers added as special tokens where the format needs them) ---------------------------------

SYN = "synthetic-families"

REASONING_CASES = [
    # (name, kwargs, vocab folder or None, text, (reasoning, content))
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


TestReasoning = reasoning_tests(REASONING_CASES, ('plamo3',))


def test_prompt_closes_reasoning():
    assert parser_cls("plamo3").reasoning_ended_in_prompt([], ctx(SYN, {"enable_thinking": False})) is True


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

PLAMO_ARGS = "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"


@st.composite
def plamo_output(draw) -> str:
    reqs = "".join(
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>"
        + draw(st.sampled_from(["f", "get_weather"])) + "<|plamo:end_tool_name:plamo|>" + PLAMO_ARGS
        + draw(WS) + draw(st.one_of(OBJECTS, st.just(""))) + draw(WS)
        + "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
        for _ in range(draw(st.integers(1, 3))))
    head = draw(st.sampled_from(["", "Checking. ", "\n"]))
    tail = draw(st.sampled_from(["", " done", "<|plamo:tag|>"]))
    return f"{head}<|plamo:begin_tool_requests:plamo|>{reqs}<|plamo:end_tool_requests:plamo|>{tail}"


@settings(max_examples=150, deadline=None)
@given(plamo_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_plamo_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("plamo3", text)
    got = incremental("plamo3", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("plamo3", list(text), restore=False) == got
