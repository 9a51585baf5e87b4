"""Granite 4 and Granite-20B-FunctionCalling (``families/granite.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps: none known for the whole-call answers (the incremental streams, with their
documented answers for malformed calls, are in ``test_tool_incremental.py``; Granite 3's
``granite`` calls in ``test_tool_json.py``).
"""

from __future__ import annotations

from json_families import TOOLS, call_ids, family_tests
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
