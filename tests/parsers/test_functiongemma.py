"""FunctionGemma (``families/functiongemma.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- none known for the incremental stream (``--tool-call-streaming incremental``, tested at the end).
"""

from __future__ import annotations

from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import split
from incremental import CTX, restored
from json_families import family_tests

from tokenbridge.parsers import registry
from tokenbridge.parsers.families.functiongemma import value_is_text


CASES = {
    'functiongemma': [
        ('plain',
         'plain', []),
        ('<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure <start_function_call>call:get_weather{city:<escape>東京<escape>,days:<escape>3<escape>}<end_function_call> and <start_function_call>call:search{q:<escape>[1]<escape>}<end_function_call>',
         'Sure', [('get_weather', '{"city": "東京", "days": 3}'), ('search', '{"q": [1]}')]),
        ('<start_function_call>call:get_weather{city:<escape>Par',
         '', [('get_weather', '{}')]),
        ('<start_function_call>call:f{}<end_function_call>',
         '', [('f', '{}')]),
        ('<start_function_call>nope',
         '<start_function_call>nope', []),
        ('x <start_function_call>call:f{a:<escape>1<escape>}<end_function_call> tail',
         'x', [('f', '{"a": 1}')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# FunctionGemma incremental calls: ``call:NAME{key:<escape>value<escape>,…}`` read as written,
# text values streaming, adding up to the one-shot answer for every split of a well-formed output.

START, END = "<start_function_call>", "<end_function_call>"

_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<>"), max_size=12),
    st.sampled_from(["1", " 2.5 ", "true", "true story", "null", "nul", "nullx", '{"a": [1, 2]}', '"quoted"',
                     "[1,", "-", "NaN", "from x import y", "\n", "}", "a}b", "Infinity and beyond"]),
)

stream = partial(restored, "functiongemma")


@st.composite
def functiongemma_output(draw) -> str:
    calls = []
    for k in range(draw(st.integers(1, 3))):
        keys = draw(st.lists(st.sampled_from(["a", "city", "x_1", "日本"]), unique=True, max_size=3))
        args = ",".join(f"{key}:<escape>{draw(_VALUES)}<escape>" for key in keys)
        end = "}" + END if k < 2 or draw(st.booleans()) else ""
        calls.append(f"{START}call:{draw(st.sampled_from(['f', 'get_weather']))}{{{args}{end}")
    head = draw(st.sampled_from(["", "Sure. ", "  Let me look.\n", "Hi <start_function_call>oops "]))
    return head + draw(st.sampled_from(["", "\n"])).join(calls) + draw(st.sampled_from(["", "\n", " tail"]))


@settings(max_examples=300, deadline=None)
@given(functiongemma_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_functiongemma_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    assert want.calls
    assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    assert stream(list(text)) == got


@settings(max_examples=200, deadline=None)
@given(functiongemma_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    assert stream(split(text, cuts)) == stream([text]) == stream(list(text))


def test_a_text_value_streams_as_it_arrives():
    p = registry.get_tool_parser("functiongemma").incremental(CTX)
    steps = [f"Hi {START}call:write_file{{path:<escape>a.py<esc", "ape>,content:<escape>fro", "m x\n", "<escape>}" + END]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{"), (None, '"path": "a.py')], [(None, '"'), (None, ', "content": "fro')],
                    [(None, "m x\\n")], [(None, '"'), (None, "}")]]


def test_value_is_text_only_when_no_json_can_follow():
    assert [value_is_text(v) for v in ("", " ", "1", "tr", "true", "true ", "true x", "x", "N", "No")] == [
        None, None, None, None, None, None, True, True, None, True]


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from(' \n{}[]":,-.0123456789eEtrufalsnNIiy x'), max_size=8),
       st.text(st.sampled_from(' \n{}[]":,-.0123456789eEtrufalsnNIiy x'), max_size=8))
def test_a_value_decided_as_text_never_parses_as_json(value, more):
    import json

    if value_is_text(value):
        try:
            json.loads(value + more)
        except ValueError:
            return
        raise AssertionError(f"{value + more!r} parses")
