"""Mistral ``[TOOL_CALLS]`` (pre-v11 JSON array): vLLM 0.33's rules and chunking invariance."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_tool_json import TOOLS, run

W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
S = '{"name": "search", "arguments": {"q": "東京 🚀"}}'

CASES = [
    ("Bonjour.", "Bonjour.", []),
    (f"[TOOL_CALLS] [{W}]", "", [("get_weather", '{"city": "Paris"}')]),
    (f"Voilà: [TOOL_CALLS][{W}, {S}] trailing", "Voilà: ",
     [("get_weather", '{"city": "Paris"}'), ("search", '{"q": "東京 🚀"}')]),
    (f"[TOOL_CALLS]{W}", "", [("get_weather", '{"city": "Paris"}')]),  # bare object
    (f"[TOOL_CALLS][TOOL_CALLS] [{W}]", "", [("get_weather", '{"city": "Paris"}')]),
    ('Hi [TOOL_CALLS] [{"name":"f","arguments":{"a":"\\u00e9"', '[{"name":"f","arguments":{"a":"\\u00e9"', []),
    ('  [TOOL_CALLS] [{"name":"f"}]', "", [("f", "{}")]),
    ('[TOOL_CALLS] [{"name": 1, "arguments": "raw"}]', "", [("", "raw")]),
    ('[TOOL_CALLS] [1, {"x": 2}]', "[1, {\"x\": 2}]", []),
    ("[TOOL_CALLS]", "", []),
    ('[TOOL_CALLS] junk [{"name":"f","arguments":{}}] more', "", [("f", "{}")]),
]


@pytest.mark.parametrize("text,content,calls", CASES)
def test_mistral(text, content, calls):
    assert run("mistral", [text]) == (content, calls)


def test_mistral_required_bare_array():
    assert run("mistral", [f"[{W}]"], tool_choice="required") == ("", [("get_weather", '{"city": "Paris"}')])
    assert run("mistral", [f"[{W}]"]) == (f"[{W}]", [])


def test_mistral_ids():
    from tokenbridge.parsers import registry
    from tokenbridge.parsers.base import ParseContext

    p = registry.get_tool_parser("mistral")(ParseContext(tools=TOOLS, tool_choice="auto"))
    p.feed(f"[TOOL_CALLS] [{W}, {S}]", [])
    ids = [t.id for t in p.finish().tool_calls]
    assert all(len(i) == 9 and i.isalnum() for i in ids) and ids[0] != ids[1]


@settings(max_examples=40, deadline=None)
@given(text=st.sampled_from([c[0] for c in CASES]), cuts=st.lists(st.integers(0, 120), max_size=8),
       restore=st.booleans())
def test_chunking_invariance(text, cuts, restore):
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
    assert run("mistral", pieces, restore=restore) == run("mistral", [text])
