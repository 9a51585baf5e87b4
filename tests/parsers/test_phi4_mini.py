"""Phi-4-mini JSON (``families/phi4_mini.py``) tool calls: vLLM 0.33's non-streaming rules, and chunking
invariance of the streaming parser.

Known gaps: none known for the whole-call answers (the incremental stream is tested at the end).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import split
from incremental import OBJECTS, WS, incremental, whole
from json_families import chunking_test, one

from tokenbridge.parsers import registry

from parsers.engine.test_json_stream import json_string


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


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@st.composite
def phi4_output(draw) -> str:
    entries = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(["arguments", "parameters"]))
        # vLLM's call text ends at the first "]", so none is written inside a call
        members = [f'"name":{draw(WS)}{draw(json_string().filter(lambda t: "]" not in t))}',
                   f'"{key}"{draw(WS)}:{draw(WS)}{draw(OBJECTS.filter(lambda t: "]" not in t))}']
        if draw(st.booleans()):
            members.reverse()
        entries.append("{" + draw(WS) + ("," + draw(WS)).join(members) + draw(WS) + "}")
    head = draw(st.sampled_from(["", "Here you go:", "日本 😀 "]))
    tail = draw(st.sampled_from(["", " The answer is 4.", "<|im_end|>"]))
    return f"{head}functools[{draw(WS)}{(',' + draw(WS)).join(entries)}{draw(WS)}]{tail}"


@settings(max_examples=200, deadline=None)
@given(phi4_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_phi4_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("phi4_mini_json", text)
    got = incremental("phi4_mini_json", split(text, cuts))
    assert want.calls
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("phi4_mini_json", list(text), restore=False) == got
