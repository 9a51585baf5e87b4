"""dots.llm (``families/dots.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), chunking
invariance, and the incremental stream: for every split of a well-formed output it adds up to
the one-shot answer, and a malformed one gets its documented answer for every split. Content is
the parser's own output: the serving layer's whitespace-only rule lives in derender.

Known gaps:
- dots keeps its own argument value conversion, because vLLM's parser converts differently
  (``engine/schema.py``).
- incremental: a repeated parameter is sent again (vLLM keeps the last value at the first
  one's place); a JSON block (vLLM's fallback) is sent whole when it closes.
- incremental, malformed or truncated output: a call sent stands (the one-shot answer drops an
  invoke or a block left open, and then may have no call at all).
"""

from __future__ import annotations

import pytest
from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from json_families import TOOLS, VOCAB, family_tests, one
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext


CASES = {
    'dots': [
        ('plain',
         'plain', []),
        ('<dots_function_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n</dots_function_call>',
         '', [('get_weather', '{"city": "Paris", "days": 3}')]),
        (' Sure. <dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</dots_function_call> x <dots_function_call>{"name": "search", "arguments": {"q": "東京 🚀"}}</dots_function_call>',
         'Sure.', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<dots_function_call><invoke name="nope"><parameter name="a">1</parameter></invoke></dots_function_call>',
         '<dots_function_call><invoke name="nope"><parameter name="a">1</parameter></invoke></dots_function_call>', []),
        ('<dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '<dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
        ('<dots_function_call>[1]</dots_function_call>',
         '<dots_function_call>[1]</dots_function_call>', []),
        ('<dots_function_call><invoke name="search"><parameter name="q">null</parameter></invoke><invoke name=\'get_weather\'><parameter name="days">x</parameter></invoke></dots_function_call>',
         '', [('search', '{"q": null}'), ('get_weather', '{"days": "x"}')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30, required_and_named=False)


def test_dots_needs_known_tool():
    text = '<dots_function_call><invoke name="search"><parameter name="q">x</parameter></invoke></dots_function_call>'
    assert one("dots", text)[1] == [("search", '{"q": "x"}')]
    assert one("dots", text, tools=None)[1] == []


def test_dots_schema_types():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "$defs": {"N": {"type": "number"}},
        "properties": {"n": {"$ref": "#/$defs/N"}, "b": {"type": "boolean"}, "o": {"type": "object"},
                       "s": {"anyOf": [{"type": "null"}, {"type": ["integer", "null"]}]}}}}}]
    text = ('<dots_function_call><invoke name="f"><parameter name="n">2.0</parameter>'
            '<parameter name="b">1</parameter><parameter name="o">{"k": [1]}</parameter>'
            '<parameter name="s">07</parameter><parameter name="x">3</parameter></invoke></dots_function_call>')
    assert one("dots", text, tools=tools)[1] == [("f", '{"n": 2, "b": true, "o": {"k": [1]}, "s": 7, "x": "3"}')]


CTX = ParseContext(tools=TOOLS, tool_choice="auto", vocab=VOCAB)
_BLANK = st.sampled_from(["", " ", "\n", " \n "])
_VALUE = st.lists(st.sampled_from(["a", "Zürich", " ", "\n", "3", "-1.5", "null", "NULL", "nu", "l", '"', "\\",
                                   "{}", "[1]", "true", "日本 😀", "a<b", "x>y"]), max_size=5).map("".join)


def stream(pieces: list[str], incremental: bool = True, restore: bool = True):
    cls = registry.get_tool_parser("dots")
    fed = feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=restore)
    return fed.content, fed.named_calls()


@st.composite
def invoke(draw) -> str:
    name = draw(st.sampled_from(["get_weather", "search", "unknown"]))
    quote = draw(st.sampled_from(['"', "'", ""]))
    params = []
    for key in draw(st.lists(st.sampled_from(["city", "days", "q", "other"]), max_size=3, unique=True)):
        params.append(f'<parameter name="{key}">{draw(_VALUE)}</parameter>{draw(_BLANK)}')
    return f"<invoke name={quote}{name}{quote}>{draw(_BLANK)}{''.join(params)}</invoke>"


@st.composite
def dots_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure. ", " \n lead ", "日本 😀\n\n", "  "]))]
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 4)):
            body = draw(_BLANK).join(draw(st.lists(invoke(), min_size=1, max_size=3)))
        else:
            body = '{"name": "search", "arguments": {"q": "x"}}'
        out.append(f"<dots_function_call>{draw(_BLANK)}{body}{draw(_BLANK)}</dots_function_call>")
        out.append(draw(st.sampled_from(["", " between ", "\n"])))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(dots_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_incremental_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    assert stream(split(text, cuts)) == want
    assert stream(list(text), restore=False) == want


def test_a_string_value_streams_once_it_cannot_be_null():
    p = registry.get_tool_parser("dots").incremental(CTX)
    steps = ["Sure <dots_function_call><invoke name=\"search\">", '<parameter name="q"> nu', "ll", "s a", "b ",
             "</parameter></invoke></dots_function_call>"]
    deltas = [p.feed(s, []) for s in steps] + [p.finish()]
    assert [d.content for d in deltas] == ["Sure", "", "", "", "", "", ""]
    assert [[(tc.name, tc.arguments) for tc in d.tool_calls] for d in deltas] == [
        [("search", "{")], [(None, '"q": ')], [], [(None, '"nulls a')], [(None, "b")], [(None, '"'), (None, "}")], []]


@pytest.mark.parametrize("text, content, calls", [
    ('x<dots_function_call><invoke name="search"><parameter name="q">abc', "x", [("search", '{"q": "abc"}')]),
    ('x<dots_function_call><invoke name="search"><parameter name="q">abc</invoke></dots_function_call>',
     "x", [("search", '{"q": "abc"}')]),
    ('x<dots_function_call><invoke name="get_weather"><parameter name="days">12</parameter>',
     "x", [("get_weather", '{"days": 12}')]),
    ('x<dots_function_call><invoke name="get_weather"><parameter name="days">12</invoke>',
     "x", [("get_weather", "{}")]),
])
def test_malformed_output_gets_the_documented_answer_for_every_split(text, content, calls):
    assert stream([text]) == (content, calls)
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]]) == (content, calls)
    assert stream(list(text)) == (content, calls)
