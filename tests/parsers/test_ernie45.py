"""ERNIE 4.5 (``families/ernie45.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- an end marker written inside a JSON string (``{"a": "</tool_call>"}``) ends the streamed call
  there, as vLLM's own stream does (``cur_text.find(tool_call_end_token)``), while the one-shot
  answer's pattern (an object, then the marker) reads on to the object's end; the outputs
  generated for the stream tests leave the marker out of their strings.
"""

from __future__ import annotations

from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, split
from incremental import restored
from json_families import TOOLS, family_tests

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT, json_string


CASES = {
    'ernie45': [
        ('plain',
         'plain', []),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('ok\n\n\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n<tool_call>{"name": "search", "arguments": {"q": "東京 🚀"}}</tool_call>',
         'ok', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', []),
        ('hi\n<tool_call>junk',
         'hi', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>',
         '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>', []),
        ('<tool_call>{"arguments": {"a": 1}}</tool_call>',
         '', [('', '{"a": 1}')]),
        ('<tool_call>{"name": "f"}</tool_call>',
         '', [('f', '{}')]),
        ('text\n\nmore\n',
         'text\n\nmore\n', []),
        ('<tool_call>{"name": 3}</tool_call>',
         '<tool_call>{"name": 3}</tool_call>', []),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)


def test_streams_content_before_marker():
    p = registry.get_tool_parser("ernie45")(ParseContext(tools=TOOLS, tool_choice="auto"))
    assert p.feed("Answer\n\n", []).content == "Answer"
    assert p.feed("<tool_", []).content == ""


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_ernie45_reasoning():
    c = ctx()
    e = "a\n</think>\n\n<response>\ndef\n</response>\n"
    assert parse("ernie45", e, c) == ("a\n", "\ndef\n")


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# ERNIE 4.5 incremental calls: hermes' reading with the newlines before the first call held
# back, adding up to the one-shot answer for every split of a well-formed output (the known gap
# above aside).

_WS = st.text(" \n", max_size=2)

stream = partial(restored, "ernie45")


def _no_end_marker(text: str) -> bool:
    return "</tool_call>" not in text


@st.composite
def ernie_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n", "Let me check <tool", "\n", "a\nb\n\n\n"]))]
    for _ in range(draw(st.integers(1, 3))):
        members = [f'"name"{draw(_WS)}:{draw(_WS)}{draw(json_string().filter(_no_end_marker))}']
        if draw(st.integers(0, 4)):
            members.append(f'"arguments"{draw(_WS)}:{draw(_WS)}{draw(JSON_TEXT.filter(_no_end_marker))}')
        if draw(st.booleans()):
            members.reverse()
        out.append(f"<tool_call>{draw(_WS)}{{{draw(_WS)}{', '.join(members)}}}{draw(_WS)}</tool_call>")
        out.append(draw(st.sampled_from(["", "\n", " between "])))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(ernie_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_ernie45_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    else:
        assert got == stream([text])
    assert stream(list(text)) == stream([text])


def test_an_end_marker_inside_a_string_ends_the_streamed_call_for_every_split():
    text = '<tool_call>{"name":"", "arguments":{"":{"</tool_call>":""}}}</tool_call>'
    got = stream(list(text))
    assert got.named_calls() == [("", '{"": {"')]
    assert all(stream(split(text, [cut])) == got for cut in range(len(text)))


def test_newlines_are_content_without_a_call():
    assert stream(list("Hi\n\n")).content == "Hi\n\n"
    assert stream(list("Hi\n\n<tool_call>")).content == "Hi<tool_call>"
