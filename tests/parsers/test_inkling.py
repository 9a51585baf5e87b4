"""Inkling (``families/inkling.py``): tool calls and reasoning against vLLM 0.33's non-streaming
answers, and chunking invariance.

Tool expected values were produced by running vLLM's own parser classes (``extract_tool_calls``)
on plain text; reasoning values by its ``DelegatingParser`` ``parse()``, on Qwen3's real
tokenizer with the Inkling markers added as special tokens.

Known gaps:
- the incremental stream takes the call's own ``"name"`` member and sends its arguments as
  written (the one-shot answer takes the first ``"name": "…"`` text and re-serializes what the
  schema coerces); see the incremental stream's tests at the end.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_families import TOOLS, assert_engine_based, assert_random_chunking_is_one_shot, one
from feeding import SHARED_MARKERS, marker_vocab, parse, parser_cls, split
from incremental import CTX, OBJECTS, WS, incremental, whole

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.families.inkling import MARKERS as INKLING_MARKERS

from parsers.engine.test_json_stream import JSON_TEXT


I_MSG, I_TEXT, I_THINK, I_TOOL, I_END = (
    "<|message_model|>", "<|content_text|>", "<|content_thinking|>",
    "<|content_invoke_tool_json|>", "<|end_message|>",
)


def itool(fn: str, args: dict) -> str:
    return I_MSG + I_TOOL + json.dumps({"name": fn, "args": args}, ensure_ascii=False) + I_END


def itext(text: str) -> str:
    return I_MSG + I_TEXT + text + I_END

# (parser, output text, expected content, expected calls)
CASES = [
    # Inkling
    ("inkling", itext("Hello there."), "Hello there.", []),
    ("inkling", itool("get_weather", {"city": "Paris", "days": "3"}), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("inkling", I_MSG + I_THINK + "hmm" + I_END + itext("Checking.") + itool("search", {"q": "a"})
     + itool("search", {"q": "日本"}) + itext(" More."), "Checking. More.",
     [("search", '{"q": "a"}'), ("search", '{"q": "日本"}')]),
    ("inkling", I_MSG + I_TOOL + '{"name": "search", "args": {"q": "x"' + I_END, None,
     [("search", '{"q": "x"')]),
    ("inkling", I_MSG + I_TOOL + '{"name": "search", "args": "bad"}' + I_END, None,
     [("search", "bad")]),
    ("inkling", I_MSG + I_TOOL + '{"name": "search", "args": {"q": "cut', None,
     [("search", '{"q": "cut')]),
    ("inkling", itool("nope", {}), None, [("nope", "{}")]),
    ("inkling", I_MSG + "search" + I_END + "tail", "searchtail", []),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert one(name, text) == (content, calls)


def test_tool_choice_none_keeps_text_and_drops_calls():
    assert one("inkling", itext(" a ") + itool("search", {}) + "b", tool_choice="none") == (
        " a b", [])


def test_snapshot_stays_small():
    parser = registry.get_tool_parser("inkling")(ParseContext(tools=TOOLS, tool_choice="auto"))
    parser.feed(itext("A long answer. " * 40), [])
    assert len(msgspec.msgpack.encode(parser.snapshot())) < 120


def test_names_and_flags():
    assert_engine_based(('inkling',))


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_random_chunkings_accumulate_to_one_shot(data):
    assert_random_chunking_is_one_shot(data, CASES)


# -- reasoning ------------------------------------------------------------------------------

INKLING = SHARED_MARKERS  # the vocabulary vLLM's answers were recorded with


def reasoning_ctx(v, kwargs=None, prompt=None) -> ParseContext:
    return ParseContext(tool_choice="none", chat_template_kwargs=kwargs or {}, prompt_token_ids=prompt or [], vocab=v)


REASONING_CASES = [
    # (text, (reasoning, content))
    ('<|message_model|><|content_thinking|>Let me think \n<|end_message|><|message_model|><|content_text|>The answer.<|end_message|>', ('Let me think', 'The answer.')),
    ('<|message_model|><|content_thinking|>cut by length', ('cut by length', None)),
    ('plain text', (None, 'plain text')),
    ('<|message_model|><|content_thinking|>r<|content_invoke_tool_json|>{"name":"f","args":{"x":1}}<|end_message|>', ('r', '<|content_invoke_tool_json|>{"name":"f","args":{"x":1}}<|end_message|>')),
    ('<|message_model|>header<|end_message|>q', (None, 'headerq')),
    ('x<|content_thinking|>r<|end_message|>y', ('r', 'y')),
    ('<|message_model|><|content_thinking|>a <|end_message|><|message_model|><|content_thinking|>b<|content_model_end_sampling|>', ('a b', None)),
    ('<|message_model|><|content_thinking|>日本<|end_message|><|message_model|><|content_text|>é😀<|end_message|>', ('日本', 'é😀')),
    ('<|message_model|><|content_thinking|>r<|message_model|><|content_text|>t', ('r<|message_model|><|content_text|>t', None)),
    ('', (None, None)),
]


@pytest.mark.parametrize("text,expected", REASONING_CASES)
def test_reasoning_one_shot_matches_vllm(text, expected):
    assert parse("inkling", text, reasoning_ctx(marker_vocab(INKLING))) == expected


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(REASONING_CASES), cuts=st.lists(st.integers(0, 120), max_size=8))
def test_reasoning_any_chunking_accumulates_to_one_shot(case, cuts):
    text, expected = case
    assert parse("inkling", text, reasoning_ctx(marker_vocab(INKLING)), split(text, cuts)) == expected


INKLING_PIECES = [*INKLING_MARKERS, "a", " ", "\n", "日", "{}", "<|im_end|>"]


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.sampled_from(INKLING_PIECES), max_size=12), data=st.data())
def test_reasoning_random_chunking(parts, data):
    text = "".join(parts)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=5))
    c = reasoning_ctx(marker_vocab(INKLING))
    assert parse("inkling", text, c, split(text, cuts)) == parse("inkling", text, c)


@pytest.mark.parametrize("prompt,ended", [
    ("<|message_model|><|content_thinking|>", False),
    ("<|content_text|>", True),
    ("<|content_thinking|>x<|end_message|>", False),
    ("hello", False),
])
def test_markers_in_prompt(prompt, ended):
    v = marker_vocab(INKLING)
    ids = v.encode(prompt)
    assert parser_cls("inkling").reasoning_ended_in_prompt(ids, reasoning_ctx(v, prompt=ids)) is ended


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@st.composite
def inkling_output(draw) -> str:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            out.append("<|message_model|><|content_text|>" + draw(st.sampled_from(["Hi.", " ", "日本"])) + "<|end_message|>")
        members = [f'"name":{draw(WS)}"{draw(st.sampled_from(["f", "get_weather"]))}"']
        if draw(st.integers(0, 3)):
            members.append(f'"args"{draw(WS)}:{draw(WS)}{draw(OBJECTS)}')
        if draw(st.booleans()):
            members.append(f'"id": {draw(JSON_TEXT)}')
        body = "{" + draw(WS) + ("," + draw(WS)).join(members) + draw(WS) + "}"
        out.append(f"<|message_model|><|content_invoke_tool_json|>{draw(WS)}{body}{draw(WS)}<|end_message|>")
    return "".join(out) + draw(st.sampled_from(["", "tail"]))


@settings(max_examples=150, deadline=None)
@given(inkling_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_inkling_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("inkling", text)
    got = incremental("inkling", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("inkling", list(text), restore=False) == got


def test_inkling_sends_the_name_then_the_arguments_as_written():
    p = registry.get_tool_parser("inkling").incremental(CTX)
    steps = ['<|message_model|><|content_invoke_tool_json|>{"name": "f", "ar', 'gs": {"a":', ' "x"}}', "<|end_message|>"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("f", "")], [(None, '{"a":')], [(None, ' "x"}')], []]
