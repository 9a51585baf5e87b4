"""GigaChat 3 (``families/gigachat3.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations

from json_families import family_tests


CASES = {
    'gigachat3': [
        ('plain',
         'plain', []),
        ('<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Hello<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "search", "arguments": {"q": "東京 🚀"}}</s>',
         'Hello', [('search', '{"q": "東京 🚀"}')]),
        ('pre<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         'pre', [('get_weather', '{"city": "Paris"}')]),
        ('function call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}',
         'function call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', [('get_weather', '{"city": "Paris"}')]),
        ('x<|function_call|>{"name": "f", "arguments": "s"}',
         'x<|function_call|>{"name": "f", "arguments": "s"}', []),
        ('x<|function_call|>{"name": "get_weather", "arguments": {"ci',
         'x<|function_call|>{"name": "get_weather", "arguments": {"ci', []),
        ('x<|function_call|>{"name": "f", "arguments": {"a": "line\nbreak"}}',
         'x', [('f', '{"a": "line\\nbreak"}')]),
        ('a<|message_sep|>b',
         'a<|message_sep|>b', []),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)

