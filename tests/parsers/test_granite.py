"""Granite 3, Granite 4 and Granite-20B-FunctionCalling (``families/granite.py``) tool calls
against vLLM 0.33's non-streaming answers (``extract_tool_calls`` plus the serving layer's "no
call: raw content" rule), and chunking invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps: none known for the whole-call answers (the incremental streams, with their
documented answers for malformed calls, are in ``test_tool_incremental.py``; Granite 3's
``granite`` calls below).
"""

from __future__ import annotations

from feeding import ctx, parse
import pytest

from json_families import TOOLS, call_ids, chunking_test, family_tests, one
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext


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
