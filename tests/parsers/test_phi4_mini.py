"""Phi-4-mini JSON (``families/phi4_mini.py``) tool calls: vLLM 0.33's non-streaming rules, and chunking
invariance of the streaming parser.

Known gaps: none known for the whole-call answers (the incremental stream, with its documented
answers for malformed output, is in ``test_tool_incremental.py``).
"""

from __future__ import annotations

import pytest

from json_families import chunking_test, one
from tokenbridge.parsers import registry


W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
S = '{"name": "search", "arguments": {"q": "東京 🚀"}}'

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


def test_flags():
    assert registry.get_tool_parser("phi4_mini_json").supports_required_and_named is True


test_chunking_invariance = chunking_test([("phi4_mini_json", t) for t, _, _ in PHI4_CASES], 10)
