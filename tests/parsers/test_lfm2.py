"""LFM2 (``families/lfm2.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- none known for the incremental stream (``--tool-call-streaming incremental``, tested at the end).
"""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import split
from incremental import py_value, restored
from json_families import family_tests


CASES = {
    'lfm2': [
        ('plain',
         'plain', []),
        ('<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure. <|tool_call_start|>[get_weather(city="東京"), search(q="x", n=-2)]<|tool_call_end|> It is sunny.',
         'Sure.\nIt is sunny.', [('get_weather', '{"city": "東京"}'), ('search', '{"q": "x", "n": -2}')]),
        ('<|tool_call_start|>[get_weather(city="Paris")]',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|tool_call_start|>[get_weather(city="Par',
         '<|tool_call_start|>[get_weather(city="Par', []),
        ('<|tool_call_start|>[]<|tool_call_end|>',
         '<|tool_call_start|>[]<|tool_call_end|>', []),
        ('<|tool_call_start|>[f(a=1)]<|tool_call_end|>echo [f(a=1)]<|tool_call_end|> real tail',
         'real tail', [('f', '{"a": 1}')]),
        ('<|tool_call_start|>not a list<|tool_call_end|>',
         '<|tool_call_start|>not a list<|tool_call_end|>', []),
        ('<|tool_call_start|>[f(x)]<|tool_call_end|>',
         '', [('f', '{}')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# LFM2 incremental calls: the pythonic list between the markers read as it is written, adding
# up to the one-shot answer for every split of a well-formed output; a malformed or truncated
# output gets the documented answer for every split.

START, END = "<|tool_call_start|>", "<|tool_call_end|>"

_WS = st.sampled_from(["", " ", "\n", " \n "])

stream = partial(restored, "lfm2")


@st.composite
def lfm2_output(draw) -> str:
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["f", "get_weather", "api.search"]))
        keys = draw(st.lists(st.sampled_from(["a", "city", "_x"]), unique=True, max_size=3))
        args = [f"{k}{draw(_WS)}={draw(_WS)}{draw(py_value(1))}" for k in keys]
        calls.append(f"{name}({', '.join(args)})")
    head = draw(st.sampled_from(["", "Sure.", "  Let me look. \n", "\n"]))
    after = draw(st.sampled_from(["", " Done.", f" [f()]{END} echo gone{END} kept ", "\n"]))
    end = END + after if draw(st.integers(0, 4)) else ""
    return f"{head}{START}{draw(_WS)}[{draw(_WS)}{(',' + draw(_WS)).join(calls)}{draw(_WS)}]{draw(_WS)}{end}"


@settings(max_examples=300, deadline=None)
@given(lfm2_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_lfm2_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:  # outside what vLLM accepts (an f-string dict key, …): any split gives the same answer
        assert got == stream([text])
    assert stream(list(text)) == got


@settings(max_examples=200, deadline=None)
@given(lfm2_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_lfm2_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = stream(split(text, cuts))
    assert got == stream([text]) == stream(list(text))
    if not got.calls:
        assert got.content == (stream([text], incremental=False).content or "")


@pytest.mark.parametrize("text, content, calls", [
    ("No call here.", "No call here.", []),
    (f"Hi {START}[]{END}", f"Hi {START}[]{END}", []),
    (f"Hi {START}[f(1)]{END} x", "Hi1)]<|tool_call_end|> x", [("f", "{")]),
    (f"Hi {START}[f(a=1)] junk{END}", "Hijunk<|tool_call_end|>", [("f", '{"a": 1}')]),
    (f"Hi {START}[f(a='x{END}", "Hi", [("f", '{"a": "x')]),
])
def test_malformed_lfm2_outputs_get_the_documented_answer(text, content, calls):
    for pieces in ([text], list(text), split(text, [4, 9, 23])):
        got = stream(pieces)
        assert (got.content, got.named_calls()) == (content, calls)
