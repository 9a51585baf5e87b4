"""Gemma 4 and Muse tool calls: vLLM 0.33's non-streaming answers and chunking invariance.

Expected values were taken from vLLM 0.33's ``extract_tool_calls`` of
``Gemma4EngineToolParser`` (with ``skip_reasoning_parsing`` set as vLLM's serving layer sets it
when no reasoning parser is configured), ``MuseToolParser`` and ``MuseGlimmerToolParser``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import feed
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from conftest import MODELS

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


def run(name, pieces, tool_choice="auto", reasoning_parser="gemma4", restore=False):
    ctx = ParseContext(tools=TOOLS, tool_choice=tool_choice, vocab=VOCAB,
                       reasoning_parser=reasoning_parser)
    fed = feed(lambda: registry.get_tool_parser(name)(ctx), pieces, restore)
    return fed.content, fed.named_calls()


W = f"<|tool_call>call:get_weather{{location:{Q}Paris{Q},days:2}}<tool_call|>"
S = f"<|tool_call>call:search{{q:{Q}東京 🚀{Q}}}<tool_call|>"
W_ARGS = '{"location": "Paris", "days": 2}'

GEMMA4_CASES = [
    # (text, content, calls) with a reasoning parser configured
    ("hello world", "hello world", []),
    (W, "", [("get_weather", W_ARGS)]),
    ("Hi " + W + S, "Hi", [("get_weather", W_ARGS), ("search", '{"q": "東京 🚀"}')]),
    (f"Sure. <|tool_call>call:search{{q:{Q}x{Q}}}<tool_call|> after <|im_end|>",
     "Sure.", [("search", '{"q": "x"}')]),  # text after a call is dropped
    (f"<|tool_call>call:get_weather{{location:{Q}Paris", "",
     [("get_weather", '{"location": "Paris"}')]),  # missing end marker / length cut
    (f"<|tool_call>call:get_weather{{days:2,location:{Q}Par", "",
     [("get_weather", '{"days": 2, "location": "Par"}')]),
    ("<|tool_call>call:get_weather{days:x}<tool_call|>", "",
     [("get_weather", '{"days": "x"}')]),  # not coercible: stays a string
    ("<|tool_call>call:unknown{x:1}<tool_call|>tail", "", [("unknown", '{"x": "1"}')]),
    (f"<|tool_call>call:get_weather{{nested:{{a:[1,{Q}b{Q},{{c:true}}]}},n:null}}<tool_call|>", "",
     [("get_weather", '{"nested": {"a": ["1", "b", {"c": "true"}]}, "n": "null"}')]),
    (f"<|tool_call>:search{{q:{Q}x{Q}}}<tool_call|>", "", [("search", '{"q": "x"}')]),
    (f"<|tool_call>call:search(q:{Q}x{Q})<tool_call|>", "", [("search", '{"q": "x"}')]),
    (f"<|tool_call>call: search {{q:{Q}x{Q}}} <tool_call|>", "", [("search", '{"q": "x"}')]),
    (f"<|tool_call>call:search{{q:{Q}a,b}}{Q}}}<tool_call|>", "", [("search", '{"q": "a,b}"}')]),
    ("<|tool_call>call:search<tool_call|>", "", [("search", "{}")]),
    ("<|tool_call>garbage<tool_call|>z", "z", []),  # no name: the call vanishes
    ("  <|tool_call>garbage<tool_call|>  ", "", []),
    ("a<tool_call|>b", "ab", []),
    ("call:search{q:1}", "call:search{q:1}", []),
    ("x <|channel>thought\nhmm<channel|>y", "x y", []),
    (f"<channel|>a<|tool_call>call:search{{q:{Q}x{Q}}}<tool_call|>b", "a", [("search", '{"q": "x"}')]),
    (f"thought\nabc<channel|>z <|tool_call>call:search{{q:{Q}x{Q}}}<tool_call|>", "z",
     [("search", '{"q": "x"}')]),
    ("q[<channel|>days),call::", "days),call::", []),
]

NO_REASONING_CASES = [
    ("x <|channel>thought\nhmm<channel|>y", "x <|channel>thought\nhmm<channel|>y", []),
    (f"thought\nabc<channel|>z <|tool_call>call:search{{q:{Q}x{Q}}}<tool_call|>",
     "<|channel>thought\nabc<channel|>z", [("search", '{"q": "x"}')]),
    (f"<channel|>a<|tool_call>call:search{{q:{Q}x{Q}}}<tool_call|>b", "<|channel><channel|>a",
     [("search", '{"q": "x"}')]),
]

NONE_CHOICE_CASES = [
    (f"Sure. <|tool_call>call:search{{q:{Q}x{Q}}}<tool_call|> after <|im_end|>", "Sure.  after ", []),
    ("  <|tool_call>garbage<tool_call|>  ", "    ", []),
    ("Hi " + W + S, "Hi ", []),
]


@pytest.mark.parametrize("text,content,calls", GEMMA4_CASES)
def test_gemma4_one_shot(text, content, calls):
    assert run("gemma4", [text]) == (content, calls)


@pytest.mark.parametrize("text,content,calls", NO_REASONING_CASES)
def test_gemma4_without_reasoning_parser_keeps_channel_markup(text, content, calls):
    assert run("gemma4", [text], reasoning_parser=None) == (content, calls)


@pytest.mark.parametrize("text,content,calls", NONE_CHOICE_CASES)
def test_gemma4_tool_choice_none_strips_markup(text, content, calls):
    assert run("gemma4", [text], tool_choice="none") == (content, calls)


def test_gemma4_alias_and_flags():
    cls = registry.get_tool_parser("gemma-4")
    assert cls is registry.get_tool_parser("gemma4")
    assert cls.engine_based and not cls.supports_required_and_named


ALL_TEXTS = [c[0] for c in GEMMA4_CASES]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(ALL_TEXTS), st.lists(st.integers(min_value=0, max_value=400), max_size=8),
       st.booleans())
def test_gemma4_chunking_invariance(text, cuts, restore):
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    assert run("gemma4", pieces, restore=restore) == run("gemma4", [text])


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
