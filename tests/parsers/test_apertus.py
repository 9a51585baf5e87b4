"""Apertus (``families/apertus.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations

from json_families import family_tests
from tokenbridge.parsers import registry


CASES = {
    'apertus': [
        ('plain',
         'plain', []),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('I will check. <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"search": {"q": "東京 🚀"}}]<|tools_suffix|> after',
         'I will check.\nafter', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Par',
         '', [('get_weather', '{"city": "Par"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}] trailing',
         'trailing', [('get_weather', '{"city": "Paris"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris", "days": 1',
         '', [('get_weather', '{"city": "Paris", "days": 1}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris", "da',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"sea',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|tools_prefix|>',
         '<|tools_prefix|>', []),
        ('<|tools_prefix|>garbage<|tools_suffix|>',
         '<|tools_prefix|>garbage<|tools_suffix|>', []),
        ('<|tools_prefix|>[{}, 1]<|tools_suffix|>',
         '', []),
        ('<|tools_prefix|>{"f": {"a": [1, 2, tr',
         '', [('f', '{"a": [1, 2, true]}')]),
        ('<|tools_prefix|>[{"f": {"a": -1.5e',
         '', [('f', '{"a": -1.5}')]),
        ('<|tools_prefix|>[{"f": {"a": "x\\u00',
         '', [('f', '{"a": "x"}')]),
        ('<|tools_prefix|>[{"f": {"a": 12',
         '', [('f', '{"a": 12}')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 40)


def test_alias():
    assert registry.get_tool_parser("apertus2509") is registry.get_tool_parser("apertus")
