"""Granite 3, Granite 4 and Granite-20B-FunctionCalling (``families/granite.py``) tool calls
against vLLM 0.33's non-streaming answers (``extract_tool_calls`` plus the serving layer's "no
call: raw content" rule), and chunking invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps: none known for the whole-call answers (the incremental streams, with their
documented answers for malformed calls, are tested at the end; Granite 3's ``granite`` calls
below).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, split
from incremental import CTX, OBJECTS, WS, hermes_output, incremental, whole
from json_families import TOOLS, call_ids, chunking_test, family_tests, one

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT


CASES = {
    'granite4': [
        ('plain',
         'plain', []),
        ('',
         '', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call> mid <tool_call>{"name": "search", "arguments": {"q": "東京 🚀"}}</tool_call> end',
         'Hi  mid  end', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call></tool_call>',
         '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call></tool_call>', []),
        ('<tool_call></tool_call>',
         '<tool_call></tool_call>', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>',
         '<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>', []),
        ('<tool_call>{"name": "f", "arguments": "raw"}</tool_call>',
         '', [('f', 'raw')]),
        ('<tool_call>{"name": "f"}</tool_call>',
         '<tool_call>{"name": "f"}</tool_call>', []),
        ('<tool_call>{"name": 1, "arguments": {}}</tool_call>',
         '<tool_call>{"name": 1, "arguments": {}}</tool_call>', []),
        ('<tool_call>{"name": "f", "arguments": null}</tool_call>',
         '<tool_call>{"name": "f", "arguments": null}</tool_call>', []),
        ('x</tool_call>y',
         'x</tool_call>y', []),
        ('<tool_call>[1]</tool_call>',
         '<tool_call>[1]</tool_call>', []),
        ('<tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
         '<tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"ci',
         '<tool_call>{"name": "get_weather", "arguments": {"ci', []),
        # whitespace-only content next to calls: derender's gate makes it null, as vLLM does
        ('  \n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
         '  \n', [('get_weather', '{"city": "Paris"}')]),
    ],
    'granite-20b-fc': [
        ('plain',
         'plain', []),
        ('<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('pre <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}} junk <function_call>{"name": "search", "arguments": {"q": "東京 🚀"}}',
         'pre ', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<function_call>{"name": "get_weather", "parameters": {"city": "Paris"}}',
         '<function_call>{"name": "get_weather", "parameters": {"city": "Paris"}}', []),
        ('<function_call> {"name": "f", "arguments": "s"}',
         '', [('f', '"s"')]),
        ('<function_call> nope',
         '<function_call> nope', []),
        ('<function_call> {"name": "get_weather", "arguments": {"ci',
         '<function_call> {"name": "get_weather", "arguments": {"ci', []),
        ('<function_call>{"arguments": {}}',
         '<function_call>{"arguments": {}}', []),
        ('<function_call>[1]',
         '<function_call>[1]', []),
        ('a <function_ b',
         'a <function_ b', []),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 40)


def test_ids():
    W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    assert call_ids("granite4", f"<tool_call>{W}</tool_call>") == [None]


def test_streams_content_before_marker():
    p = registry.get_tool_parser("granite4")(ParseContext(tools=TOOLS, tool_choice="auto"))
    assert p.feed("a</tool_call>b<tool_call>", []).content == "a"


# -- Granite 3 (``granite``): ``<|tool_call|>[…]`` JSON lists --------------------------------------

W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
S = '{"name": "search", "arguments": {"q": "東京 🚀"}}'

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


def test_granite3_flags():
    assert registry.get_tool_parser("granite").supports_required_and_named is True
    assert registry.get_tool_parser("granite").engine_based is True


test_granite3_chunking_invariance = chunking_test([("granite", t) for t, _, _ in GRANITE_CASES], 15)


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_granite_reasoning():
    c = ctx()
    g = "Here is my thought process: hm Here's my response: ok"
    assert parse("granite", g, c) == (" hm ", " ok")
    assert parse("granite", "plain", c) == (None, "plain")


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@st.composite
def granite_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.", "Let me look. ", " \n", "日本 😀"]))]
    for _ in range(draw(st.integers(1, 2))):
        elements = []
        for _ in range(draw(st.integers(1, 3))):
            members = [f'"name":{draw(WS)}"{draw(st.sampled_from(["f", "get_weather", "日本"]))}"',
                       f'"arguments"{draw(WS)}:{draw(WS)}{draw(OBJECTS)}']
            if draw(st.booleans()):
                members.append(f'"id": {draw(JSON_TEXT)}')
            elements.append("{" + draw(WS) + ("," + draw(WS)).join(members) + draw(WS) + "}")
        sep = draw(st.sampled_from([",", ", ", ",\n"]))
        marker = draw(st.sampled_from(["<|tool_call|>", "<tool_call>"]))
        out.append(f"{marker}{draw(WS)}[{draw(WS)}{sep.join(elements)}{draw(WS)}]")
        out.append(draw(st.sampled_from(["", " after", "\n"])))
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(granite_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_granite_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("granite", text)
    got = incremental("granite", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("granite", list(text), restore=False) == got


def test_granite_sends_arguments_as_written():
    p = registry.get_tool_parser("granite").incremental(CTX)
    steps = ['Hi <|tool_call|>[{"name": "f",', ' "arguments": {"a":  1', '.50, "b": "x', 'y"}}, {"name": "g"}]']
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps] + [p.finish().tool_calls]
    assert sent == [[("f", "")], [(None, '{"a":  ')], [(None, '1.50, "b": "x')], [(None, 'y"}'), ("g", "{}")], []]


@pytest.mark.parametrize("text, content, calls", [
    # a truncated element stands once named; the held text is dropped
    ('<|tool_call|>[{"name": "f", "arguments": {"a": 1}', "", [("f", '{"a": 1}')]),
    # invalid JSON after the name: the call stands, the rest is content
    ('<|tool_call|>[{"name": "f", "arguments": {"a": tru}}]', "tru}}]", [("f", '{"a": ')]),
    # not an array after the marker: the marker goes, the rest is content
    ("Hi <|tool_call|> no call", "Hi no call", []),
    # an element with no name: content from its start
    ('<|tool_call|>[{"arguments": {}}]', '{"arguments": {}}]', []),
])
def test_granite_documented_answers(text, content, calls):
    for pieces in ([text], list(text)):
        got = incremental("granite", pieces)
        assert (got.content, got.named_calls()) == (content, calls)


@settings(max_examples=150, deadline=None)
@given(hermes_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_granite4_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("granite4", text)
    got = incremental("granite4", split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == incremental("granite4", [text])
    assert incremental("granite4", list(text), restore=False) == incremental("granite4", [text])


@settings(max_examples=150, deadline=None)
@given(hermes_output("<function_call>", ""), st.lists(st.integers(0, 10_000), max_size=10))
def test_granite_20b_fc_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("granite-20b-fc", text)
    got = incremental("granite-20b-fc", split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == incremental("granite-20b-fc", [text])
    assert incremental("granite-20b-fc", list(text), restore=False) == incremental("granite-20b-fc", [text])
