"""xLAM (``families/xlam.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), chunking
invariance, and the incremental stream: a bare call array streams and, for every split of a
well-formed output (any form), adds up to the one-shot answer; a malformed one gets its
documented answer for every split. Content is the parser's own output: the serving layer's
whitespace-only rule lives in derender.

Known gaps:
- incremental: only a bare call array streams; the other forms are decided whole (vLLM finds
  their block by a search of the whole text).
- incremental: in a bare array, a string holding a block vLLM's search prefers (a code fence,
  ``[TOOL_CALLS]``, ``<tool_call>`` or ``</think>`` around valid JSON) is read as text; a
  repeated key is sent again, a repeated ``name``/``arguments`` keeps the first (vLLM the last).
- incremental, malformed output after a call was sent (an entry with a name and no arguments,
  arguments neither an object nor a string, text after the array): the calls stand and the text
  from the breaking byte is content, where the one-shot answer makes the whole text content.
"""

from __future__ import annotations

import pytest
from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from json_families import TOOLS, VOCAB, call_ids, family_tests
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT, json_string


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


CTX = ParseContext(tools=TOOLS, tool_choice="auto", vocab=VOCAB)
_WS = st.text(" \n", max_size=2)
_OBJECTS = JSON_TEXT.filter(lambda t: t.startswith("{"))


def stream(pieces: list[str], incremental: bool = True, restore: bool = True):
    cls = registry.get_tool_parser("xlam")
    fed = feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=restore)
    return fed.content, fed.named_calls()


@st.composite
def entry(draw) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(JSON_TEXT.filter(lambda t: not t.startswith("{")))
    if kind == 1:  # no name: vLLM skips it
        return f'{{"arguments": {draw(_OBJECTS)}, "x": 1}}'
    members = [f'"name"{draw(_WS)}:{draw(_WS)}{draw(json_string())}',
               f'"arguments"{draw(_WS)}:{draw(_WS)}{draw(st.one_of(_OBJECTS, json_string()))}']
    if draw(st.booleans()):
        members.insert(draw(st.integers(0, 2)), f'"id": {draw(JSON_TEXT)}')
    if draw(st.booleans()):
        members.reverse()
    return "{" + draw(_WS) + ("," + draw(_WS)).join(members) + draw(_WS) + "}"


@st.composite
def xlam_array(draw) -> str:
    entries = draw(st.lists(entry(), max_size=4))
    return f"{draw(_WS)}[{draw(_WS)}{(',' + draw(_WS)).join(entries)}{draw(_WS)}]{draw(_WS)}"


@settings(max_examples=300, deadline=None)
@given(xlam_array(), st.lists(st.integers(0, 10_000), max_size=10))
def test_incremental_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    assert stream(split(text, cuts)) == want
    assert stream(list(text), restore=False) == want


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([t for t, _, _ in CASES["xlam"]]), st.lists(st.integers(0, 10_000), max_size=6))
def test_the_other_forms_are_decided_whole(text, cuts):
    want = stream([text], incremental=False)
    if want[1] or not text.lstrip().startswith("[{"):
        assert stream(split(text, cuts)) == want


def test_a_call_is_sent_when_its_name_closes():
    p = registry.get_tool_parser("xlam").incremental(CTX)
    steps = [' [{"name": "sea', 'rch", "arguments": {"q": "a', 'b"}', "}]"]
    deltas = [p.feed(s, []) for s in steps] + [p.finish()]
    assert [[(tc.name, tc.arguments) for tc in d.tool_calls] for d in deltas] == [
        [], [("search", '{"q": "a')], [(None, 'b"}')], [], []]
    assert deltas[1].tool_calls[0].id.startswith("call_0_")


@pytest.mark.parametrize("text, content, calls", [
    ('[{"name": "get_weather", "arguments": {"ci', "", [("get_weather", '{"ci')]),
    ('[{"name": "f", "arguments": 3}]', "3}]", [("f", "")]),
    ('[{"name": "f", "arguments": {}}] x', "x", [("f", "{}")]),
    ('[{"name": "f"}]', "}]", [("f", "")]),
    ('[{"name": "f", "arguments": {"a": 1}}, garbage', "garbage", [("f", '{"a": 1}')]),
])
def test_malformed_output_gets_the_documented_answer_for_every_split(text, content, calls):
    assert stream([text]) == (content, calls)
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]]) == (content, calls)
    assert stream(list(text)) == (content, calls)
