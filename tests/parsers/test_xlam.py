"""xLAM (``families/xlam.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations

from json_families import family_tests, call_ids


CASES = {
    'xlam': [
        ('plain',
         'plain', []),
        ('[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"q": "東京 🚀"}}]',
         '', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('```json\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n```',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure!\n```json\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n``` done',
         'Sure!\n done', [('get_weather', '{"city": "Paris"}')]),
        ('<tool_call>[{"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_call>',
         '', [('search', '{"q": "東京 🚀"}')]),
        ('[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]\nbye',
         'bye', [('get_weather', '{"city": "Paris"}')]),
        ('<think>hmm</think>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '<think>hmm</think>', [('get_weather', '{"city": "Paris"}')]),
        ('<think>hmm</think>text <tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>',
         '<think>hmm</think>', [('get_weather', '{"city": "Paris"}')]),
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
        ('[{"name": "get_weather", "arguments": {"ci',
         '[{"name": "get_weather", "arguments": {"ci', []),
        ('[{"name": "f", "arguments": "s"}, {"x": 1}]',
         '', [('f', 's')]),
        ('[{"name": "f", "arguments": 3}]',
         '[{"name": "f", "arguments": 3}]', []),
        ('[1, 2]',
         '[1, 2]', []),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 40)


def test_ids():
    W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    x = call_ids("xlam", f"[{W}, {W}]")
    assert [i[:7] for i in x] == ["call_0_", "call_1_"] and all(len(i) == 23 for i in x)
