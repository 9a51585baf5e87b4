"""Jamba (``families/jamba.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps: none known (its incremental stream is in ``test_tool_incremental.py``).
"""

from __future__ import annotations

from json_families import family_tests


CASES = {
    'jamba': [
        ('plain',
         'plain', []),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_calls> after <tool_calls>[]</tool_calls>',
         'Sure ', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', []),
        ('<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>',
         '<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>', []),
        (' <tool_calls>[]</tool_calls>',
         ' ', []),  # vLLM: null (tools_called with no call); derender keeps the blank
        ('x <tool_calls>[]</tool_calls>',
         'x ', []),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"ci</tool_calls>',
         '<tool_calls>[{"name": "get_weather", "arguments": {"ci</tool_calls>', []),
        ('<tool_calls>[{"name": "get_weather", "parameters": {"city": "Paris"}}]</tool_calls>',
         '<tool_calls>[{"name": "get_weather", "parameters": {"city": "Paris"}}]</tool_calls>', []),
        ('<tool_calls>[{"name": "f", "arguments": "s"}]</tool_calls>',
         '', [('f', '"s"')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 40)

