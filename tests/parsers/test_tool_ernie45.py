"""ERNIE 4.5 incremental calls: hermes' reading with the newlines before the first call held
back, adding up to the one-shot answer for every split of a well-formed output.

Known gap: an end marker written inside a JSON string (``{"a": "</tool_call>"}``) ends the
streamed call there, as vLLM's own stream does (``cur_text.find(tool_call_end_token)``), while
the one-shot answer's pattern (an object, then the marker) reads on to the object's end; the
outputs generated here leave the marker out of their strings.
"""

from __future__ import annotations

from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT, json_string

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
_WS = st.text(" \n", max_size=2)


def run(pieces: list[str], incremental: bool = True):
    cls = registry.get_tool_parser("ernie45")
    return feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=True)


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
    want = run([text], incremental=False)
    got = run(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    else:
        assert got == run([text])
    assert run(list(text)) == run([text])


def test_an_end_marker_inside_a_string_ends_the_streamed_call_for_every_split():
    text = '<tool_call>{"name":"", "arguments":{"":{"</tool_call>":""}}}</tool_call>'
    got = run(list(text))
    assert got.named_calls() == [("", '{"": {"')]
    assert all(run(split(text, [cut])) == got for cut in range(len(text)))


def test_newlines_are_content_without_a_call():
    assert run(list("Hi\n\n")).content == "Hi\n\n"
    assert run(list("Hi\n\n<tool_call>")).content == "Hi<tool_call>"
