"""InternLM (internlm, interns1) (``families/internlm.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
- where vLLM fails the request with an uncaught error, the text is kept as content.
"""

from __future__ import annotations

from json_families import family_tests, one


CASES = {
    'internlm': [
        ('plain',
         'plain', []),
        ('<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Let me check.<|action_start|><|plugin|>\n{"name": "search", "arguments": {"q": "東京 🚀"}}<|action_end|>',
         'Let me check.', [('search', '{"q": "東京 🚀"}')]),
        ('<|action_start|><|plugin|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|action_start|><|plugin|>{"name": "f", "parameters": {"a": 1}, "arguments": {"b": 2}}<|action_end|>',
         '', [('f', '{"a": 1}')]),
        ('<|action_start|><|plugin|>{"name": "f"}<|action_end|>',
         '', [('f', '{}')]),
        ('<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci',
         '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci', []),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)


def test_internlm_error_cases_stay_content():
    """vLLM fails the request (uncaught error); the text is kept as content instead."""
    for text in (
        '<|action_start|><|plugin|>{"name": "f", "parameters": {}}<|action_start|><|plugin|>{}',
        '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci',
    ):
        assert one("internlm", text) == (text, [])
        assert one("interns1", text) == (text, [])
