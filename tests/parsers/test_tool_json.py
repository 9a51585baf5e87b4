"""Marker + JSON tool-call families (hermes, longcat, llama3_json, phi4_mini_json, granite):
vLLM 0.33's non-streaming rules, and chunking invariance of the streaming parser."""

from __future__ import annotations


import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from json_families import TOOLS, one, run
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
S = '{"name": "search", "arguments": {"q": "東京 🚀"}}'

HERMES_CASES = [
    # (text, content, calls)
    ("plain answer", "plain answer", []),
    ("", "", []),
    (f"<tool_call>\n{W}\n</tool_call>", "", [("get_weather", '{"city": "Paris"}')]),
    (f"Sure.\n<tool_call>{W}</tool_call>\n<tool_call>{S}</tool_call> after",
     "Sure.\n", [("get_weather", '{"city": "Paris"}'), ("search", '{"q": "東京 🚀"}')]),
    (f"<tool_call>{W}", "", [("get_weather", '{"city": "Paris"}')]),  # missing end marker
    ('x<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>',
     'x<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>', []),  # invalid JSON
    ('<tool_call>{"name": "get_weather", "arguments": {"ci', '<tool_call>{"name": "get_weather", "arguments": {"ci', []),
    (f"<tool_call>{W}</tool_call><tool_call>[1]</tool_call>",
     f"<tool_call>{W}</tool_call><tool_call>[1]</tool_call>", []),  # one bad call spoils all
    ('<tool_call>{"name": "nope", "arguments": {"a": "\\u00e9"}}</tool_call>', "", [("nope", '{"a": "é"}')]),
    ('<tool_call>{"name": "f"}</tool_call>', '<tool_call>{"name": "f"}</tool_call>', []),
    ("<tool_call></tool_call>", "<tool_call></tool_call>", []),
    ('<tool_call>{"name": 3, "arguments": {}}</tool_call>', '<tool_call>{"name": 3, "arguments": {}}</tool_call>', []),
    ('<tool_call>{"name":"f","arguments":"raw"}</tool_call>', "", [("f", '"raw"')]),
    ("a <tool_ b", "a <tool_ b", []),
]


@pytest.mark.parametrize("text,content,calls", HERMES_CASES)
def test_hermes(text, content, calls):
    assert one("hermes", text) == (content, calls)
    assert one("qwen3_json", text) == (content, calls)


def test_longcat():
    text = f"hi<longcat_tool_call>{W}</longcat_tool_call>"
    assert one("longcat", text) == ("hi", [("get_weather", '{"city": "Paris"}')])
    assert one("longcat", f"<tool_call>{W}</tool_call>")[1] == []


LLAMA_CASES = [
    ("Hello there.", "Hello there.", []),
    ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}', "",
     [("get_weather", '{"city": "Paris"}')]),
    (f"Here you go: {W} done", "", [("get_weather", '{"city": "Paris"}')]),  # prose dropped
    (f"{W}; {S}", "", [("get_weather", '{"city": "Paris"}'), ("search", '{"q": "東京 🚀"}')]),
    # vLLM skips a "{" right at the previous end, then trips on the glued object's inner "{"
    (f"{W}{S}", f"{W}{S}", []),
    ('{"name": "get_weather", "parameters": {"city": "S\\u00e3o"}', '{"name": "get_weather", "parameters": {"city": "S\\u00e3o"}', []),
    ('{"name": "get_weather", "parameters": {"ci', '{"name": "get_weather", "parameters": {"ci', []),
    (f"use {{x}} then {W}", f"use {{x}} then {W}", []),  # a stray brace spoils all
    ('{"name": "f", "arguments": {"a": 1}, "parameters": {"b": 2}}', "", [("f", '{"a": 1}')]),
    ('{"arguments": {}}', '{"arguments": {}}', []),
    ("<|python_tag|>", "<|python_tag|>", []),
]


@pytest.mark.parametrize("text,content,calls", LLAMA_CASES)
def test_llama3_json(text, content, calls):
    assert one("llama3_json", text) == (content, calls)
    assert one("llama4_json", text) == (content, calls)


PHI4_CASES = [
    ("No tools.", "No tools.", []),
    (f"Sure: functools[{W}] bye", "", [("get_weather", '{"city": "Paris"}')]),
    (f"functools[{W}, {S}]", "", [("get_weather", '{"city": "Paris"}'), ("search", '{"q": "東京 🚀"}')]),
    ('functools[{"name": "f", "arguments": {"a": [1, 2]}}]', "", []),  # first "]" ends it: bad JSON, no calls
    ('functools[{"name":"f","arguments":{"a":1}', 'functools[{"name":"f","arguments":{"a":1}', []),  # no "]"
    ('functools[{"name":"f","parameters":{"a":"\\u00e9"}}]', "", [("f", '{"a": "é"}')]),
    ('functools[{"arguments":{}}]', 'functools[{"arguments":{}}]', []),
]


@pytest.mark.parametrize("text,content,calls", PHI4_CASES)
def test_phi4_mini(text, content, calls):
    assert one("phi4_mini_json", text) == (content, calls)


GRANITE_CASES = [
    ("Just text.", "Just text.", []),
    ('<|tool_call|>[{"name": "get_weather","arguments": {"city": "Paris"}}]', "",
     [("get_weather", '{"city": "Paris"}')]),
    ('  Intro. <tool_call> [{"name":"search","arguments":{"q":"x"}}, {"name":"get_weather","arguments":{"city":"東京"}}] tail',
     "Intro.", [("search", '{"q":"x"}'), ("get_weather", '{"city":"東京"}')]),
    # verbatim arguments unless the schema coerces a value
    ('<tool_call>[{"name":"get_weather","arguments":{"city":"Rome", "days":"3"}}]', "",
     [("get_weather", '{"city": "Rome", "days": 3}')]),
    ('<tool_call>[{"name":"get_weather","arguments":{"city": 5}}]', "",
     [("get_weather", '{"city": "5"}')]),
    # truncated element: the span so far
    ('<|tool_call|>[{"name": "search","arguments": {"q": "vLLM", "n": ', "",
     [("search", '{"q": "vLLM", "n": ')]),
    # no "arguments" member
    ('<|tool_call|>[{"name": "unknown_fn"}]', "", [("unknown_fn", "{}")]),
    # marker not followed by an array: marker and blanks vanish, the rest is content
    ("a<tool_call>  hello", "ahello", []),
    ("a<tool_call>[] b", "a b", []),
    ("<|im_end|>x<|endoftext|>", "x", []),  # other special tokens vanish
    ('<tool_call>[{"arguments": {"a": 1}}] after', " after", []),  # no name: no call, text kept
]


@pytest.mark.parametrize("text,content,calls", GRANITE_CASES)
def test_granite(text, content, calls):
    assert one("granite", text) == (content, calls)


def test_granite_tool_choice_none():
    text = 'Hi <tool_call>[{"name":"search","arguments":{"q":"x"}}] bye'
    assert one("granite", text, tool_choice="none") == ("Hi  bye", [])
    assert one("granite", text, tool_choice="none", tools=None) == ("Hi", [])


def test_flags():
    for name in ("hermes", "longcat", "llama3_json", "mistral"):
        assert registry.get_tool_parser(name).supports_required_and_named is False
    for name in ("phi4_mini_json", "granite"):
        assert registry.get_tool_parser(name).supports_required_and_named is True
    assert registry.get_tool_parser("granite").engine_based is True


def test_streams_content_before_marker():
    p = registry.get_tool_parser("hermes")(ParseContext(tools=TOOLS, tool_choice="auto"))
    assert p.feed("Hello <tool", []).content == "Hello "
    assert p.feed("_call>{", []).content == ""
    assert msgspec.to_builtins(p.snapshot()) == ["<tool_call>{", "held", True]


def test_refuses_a_json_family_state_of_stream_state_version_1():
    """``[held text, holding]``, the state the JSON-family parser wrote before the held shells
    merged (stream-state version 1, no longer read since version 3)."""
    p = registry.get_tool_parser("hermes")(ParseContext(tools=TOOLS, tool_choice="auto"))
    for old in (["<tool_call>{", True], ["<tool", False]):
        with pytest.raises(ValueError):
            p.restore(old)


ALL = [("hermes", t) for t, _, _ in HERMES_CASES] + [("llama3_json", t) for t, _, _ in LLAMA_CASES] \
    + [("phi4_mini_json", t) for t, _, _ in PHI4_CASES] + [("granite", t) for t, _, _ in GRANITE_CASES] \
    + [("longcat", f"hi<longcat_tool_call>{W}</longcat_tool_call> x")]


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(ALL), cuts=st.lists(st.integers(0, 200), max_size=8), restore=st.booleans())
def test_chunking_invariance(case, cuts, restore):
    name, text = case
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
    assert run(name, pieces, restore=restore) == one(name, text)
