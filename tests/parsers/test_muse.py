"""Muse Spark and Glimmer (``families/muse.py``): tool calls and reasoning against vLLM 0.33's
non-streaming answers, and chunking invariance.

Tool expected values are vLLM 0.33's ``MuseToolParser`` / ``MuseGlimmerToolParser``
``extract_tool_calls``; reasoning values its ``DelegatingParser`` ``parse()``, run on Qwen3's
real tokenizer with the Muse markers added as special tokens.

The incremental stream adds up to the same answer for every split of a well-formed output.

Known gaps:
- incremental: an invoke left open when its message ends is closed (vLLM reads the tool
  messages joined, so it may continue in the next one, or be no call at all); a repeated
  parameter is sent again.
- with the muse reasoning parsers in front (they read the whole output), the text reaches the
  tool parser at the end.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS
from feeding import SHARED_MARKERS, feed, marker_vocab, parse, parser_cls, split
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}},
]
SYNTH = MODELS / "synthetic-families"
VOCAB = HFTokenizer(SYNTH, json.loads((SYNTH / "tokenizer_config.json").read_text()))
Q = '<|"|>'


def run(name, pieces, tool_choice="auto", reasoning_parser="gemma4", restore=False, incremental=False):
    ctx = ParseContext(tools=TOOLS, tool_choice=tool_choice, vocab=VOCAB,
                       reasoning_parser=reasoning_parser)
    cls = registry.get_tool_parser(name)
    fed = feed(lambda: (cls.incremental if incremental else cls)(ctx), pieces, restore)
    return fed.content, fed.named_calls()


# Muse: (text, (spark content, calls), (glimmer content, calls)), from vLLM 0.33's
# MuseToolParser / MuseGlimmerToolParser.extract_tool_calls.
MUSE_CASES = [
    ('plain answer',
     ('plain answer', []),
     ('plain answer', [])),
    (' to=self<|message|>think<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="location">東京</atem:parameter><atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls><|eom|>',
     ('', [('get_weather', '{"location": "東京", "days": 3}')]),
     ('', [('get_weather', '{"location": "東京", "days": 3}')])),
    ('<|start|>assistant to=user<|message|>Before<|eom|><|start|>assistant to=search<|message|><atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="location">東京</atem:parameter><atem:parameter name="days">3</atem:parameter></atem:invoke><atem:invoke name="search.search"><atem:parameter name="q">"quoted"</atem:parameter></atem:invoke></atem:function_calls><|eom|><|start|>assistant to=user<|message|>After<|eot|>',
     ('BeforeAfter', [('get_weather', '{"location": "東京", "days": 3}'), ('search', '{"q": "\\"quoted\\""}')]),
     ('BeforeAfter', [('get_weather', '{"location": "東京", "days": 3}'), ('search', '{"q": "quoted"}')])),
    ('<|start|>assistant to=get_weather<|message|><atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="days">3',
     ('', []),
     ('', [])),
    ('<|start|>assistant to=self<|message|><atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="location">東京</atem:parameter><atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls><|eom|>',
     ('', []),
     ('', [])),
    ('<atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="location">東京</atem:parameter><atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls>',
     ('<atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="location">東京</atem:parameter><atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls>', [('get_weather', '{"location": "東京", "days": 3}')]),
     ('<atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="location">東京</atem:parameter><atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls>', [('get_weather', '{"location": "東京", "days": 3}')])),
    ('<|start|>assistant to=commentary<|message|>Working on it<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="location">東京</atem:parameter><atem:parameter name="days">3</atem:parameter></atem:invoke></atem:function_calls>',
     ('Working on it', [('get_weather', '{"location": "東京", "days": 3}')]),
     ('', [('get_weather', '{"location": "東京", "days": 3}')])),
    ('<|message|>bare<|eom|><|start|>assistant to=get_weather<|message|><atem:invoke name="search.search"><atem:parameter name="q">"quoted"</atem:parameter></atem:invoke>',
     ('', [('search', '{"q": "\\"quoted\\""}')]),
     ('bare', [('search', '{"q": "quoted"}')])),
]


#: Well-formed outputs the incremental stream must answer as one-shot does, with the cases
#: above whose invokes are complete.
STREAMED = [c[0] for c in MUSE_CASES if c[0].count("<atem:invoke") == c[0].count("</atem:invoke>")] + [
    '<|start|>assistant to=user<|message|>Hi to you<|eom|><|start|>assistant to=get_weather<|message|>'
    '<atem:function_calls>\n<atem:invoke name="get_weather">\n<atem:parameter name="location">東京 "x"\n'
    '</atem:parameter>\n<atem:parameter name="days">[1, 2]</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
    '<|eom|> to=user<|message|>Done<|eot|>',
    '<|start|>assistant to=search<|message|><atem:invoke name="search"><atem:parameter name="q">abc</atem:parameter>'
    '<atem:parameters name="z">1</atem:parameters></atem:invoke><atem:invoke nameless><atem:parameter name="q">x'
    '</atem:parameter></atem:invoke><|eom|>',
    'junk<|start|>assistant  to=user<|message|>A<|start|>stray text<|eom|><|start|>assistant to=user<|message|>B',
]

@pytest.mark.parametrize("text,spark,glimmer", MUSE_CASES)
def test_muse_one_shot(text, spark, glimmer):
    assert run("muse", [text]) == spark
    assert run("musespark1x", [text]) == spark
    assert run("muse_glimmer", [text]) == glimmer


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([c[0] for c in MUSE_CASES]), st.sampled_from(["muse", "muse_glimmer"]),
       st.lists(st.integers(min_value=0, max_value=600), max_size=8), st.booleans())
def test_muse_chunking_invariance(text, name, cuts, restore):
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    assert run(name, pieces, restore=restore) == run(name, [text])


# -- reasoning ------------------------------------------------------------------------------

MUSE = SHARED_MARKERS  # the vocabulary vLLM's answers were recorded with


def reasoning_ctx(v, kwargs=None, prompt=None) -> ParseContext:
    return ParseContext(tool_choice="none", chat_template_kwargs=kwargs or {}, prompt_token_ids=prompt or [], vocab=v)


REASONING_CASES = [
    # (name, text, (reasoning, content))
    ('muse', 'to=self<|message|>think<|eom|>to=user<|message|>answer<|eot|>', ('think', 'answer')),
    ('muse', '<|message|>bare thought<|eom|><|start|>assistant to=commentary<|message|>c1<|eom|>', ('bare thought', 'c1')),
    ('muse', 'to=self<|message|>cut by length', ('cut by length', None)),
    ('muse', 'to=self<|message|>r<|eom|>to=fn<|message|><atem:function_calls><atem:invoke name="f"><|eom|>', ('r', 'to=fn<|message|><atem:function_calls><atem:invoke name="f"><|eom|>')),
    ('muse', 'to=self<|message|>mentions <atem:invoke inside<|eom|>to=user<|message|>ok', ('mentions <atem:invoke inside', 'ok')),
    ('muse', 'plain text only', (None, 'plain text only')),
    ('muse', 'to=self<|message|>日本<|eom|>to=user<|message|>é😀', ('日本', 'é😀')),
    ('muse', 'to=developer<|message|>dev<|eom|>to=user<|message|>hi', (None, 'hi')),
    ('muse_glimmer', 'to=self<|message|>a<|eom|>x to=self<|message|>b<|eom|>to=user<|message|>answer<|eot|>', ('a\nb', 'answer')),
    ('muse_glimmer', 'to=self<|message|>cut by length', ('cut by length', None)),
    ('muse_glimmer', 'to=self<|message|>r<|eom|>to=fn<|message|><atem:function_calls>x', ('r', 'to=fn<|message|><atem:function_calls>x')),
    ('muse_glimmer', 'to=self<|message|>mentions <atem:invoke<|eom|>to=user<|message|>ok', ('mentions <atem:invoke', 'ok')),
    ('muse_glimmer', 'plain text only', (None, 'plain text only')),
    ('muse_glimmer', 'to=self<|message|>日本<|eom|>to=user<|message|>é😀', ('日本', 'é😀')),
    ('muse_glimmer', 'to=self<|message|>open to=user<|message|>c', ('open ', 'c')),
]


@pytest.mark.parametrize("name,text,expected", REASONING_CASES)
def test_reasoning_one_shot_matches_vllm(name, text, expected):
    assert parse(name, text, reasoning_ctx(marker_vocab(MUSE))) == expected


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(REASONING_CASES), cuts=st.lists(st.integers(0, 120), max_size=8))
def test_reasoning_any_chunking_accumulates_to_one_shot(case, cuts):
    name, text, expected = case
    assert parse(name, text, reasoning_ctx(marker_vocab(MUSE)), split(text, cuts)) == expected


@pytest.mark.parametrize("name,prompt,ended", [
    ("muse", "<|start|>assistant", False),
    ("muse", '<|start|>assistant to=fn<|message|><atem:invoke name="f">', True),
    ("muse_glimmer", "<|start|>assistant", False),
    ("muse_glimmer", "<|start|>assistant to=fn<|message|><atem:invoke>", True),
])
def test_markers_in_prompt(name, prompt, ended):
    v = marker_vocab(MUSE)
    ids = v.encode(prompt)
    assert parser_cls(name).reasoning_ended_in_prompt(ids, reasoning_ctx(v, prompt=ids)) is ended


def test_aliases_resolve():
    assert parser_cls("musespark1x") is parser_cls("muse")


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(STREAMED), st.sampled_from(["muse", "muse_glimmer"]), st.lists(st.integers(0, 10_000), max_size=8))
def test_incremental_streams_add_up_to_the_one_shot_answer(text, name, cuts):
    want = run(name, [text])
    assert run(name, split(text, cuts), restore=True, incremental=True) == want
    assert run(name, list(text), incremental=True) == want


def test_a_string_parameter_streams_as_written():
    ctx = ParseContext(tools=TOOLS, tool_choice="auto", vocab=VOCAB)
    p = registry.get_tool_parser("muse").incremental(ctx)
    steps = ['<|start|>assistant to=get_weather<|message|><atem:invoke name="get_weather">',
             '<atem:parameter name="location">東', '京</atem:parameter><atem:parameter name="days">3',
             "</atem:parameter></atem:invoke><|eom|>"]
    sent = ["".join(tc.arguments for tc in d.tool_calls) for d in [p.feed(s, []) for s in steps]]
    assert sent == ["{", '"location": "東', '京"', ', "days": 3}']


def test_an_invoke_cut_by_its_message_is_closed():
    text = ('<|start|>assistant to=get_weather<|message|><atem:invoke name="get_weather"><atem:parameter '
            'name="days">3<|eom|>')
    for cut in range(len(text) + 1):
        assert run("muse", [text[:cut], text[cut:]], restore=True, incremental=True) == ("", [("get_weather", "{}")])
