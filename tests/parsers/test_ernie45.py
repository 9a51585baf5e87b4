"""ERNIE 4.5 (``families/ernie45.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations

from feeding import ctx, parse
from json_families import family_tests, TOOLS
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext


CASES = {
    'ernie45': [
        ('plain',
         'plain', []),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('ok\n\n\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n<tool_call>{"name": "search", "arguments": {"q": "東京 🚀"}}</tool_call>',
         'ok', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', []),
        ('hi\n<tool_call>junk',
         'hi', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>',
         '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>', []),
        ('<tool_call>{"arguments": {"a": 1}}</tool_call>',
         '', [('', '{"a": 1}')]),
        ('<tool_call>{"name": "f"}</tool_call>',
         '', [('f', '{}')]),
        ('text\n\nmore\n',
         'text\n\nmore\n', []),
        ('<tool_call>{"name": 3}</tool_call>',
         '<tool_call>{"name": 3}</tool_call>', []),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)


def test_streams_content_before_marker():
    p = registry.get_tool_parser("ernie45")(ParseContext(tools=TOOLS, tool_choice="auto"))
    assert p.feed("Answer\n\n", []).content == "Answer"
    assert p.feed("<tool_", []).content == ""


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_ernie45_reasoning():
    c = ctx()
    e = "a\n</think>\n\n<response>\ndef\n</response>\n"
    assert parse("ernie45", e, c) == ("a\n", "\ndef\n")
