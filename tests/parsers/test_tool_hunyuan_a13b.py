"""Hunyuan-A13B incremental calls: the ``<tool_calls>`` list streamed call by call, adding up
to the one-shot answer (and its ``call_`` ids) for every split of a well-formed output."""

from __future__ import annotations

from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT, json_string

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
_WS = st.text(" \n", max_size=2)
_OBJECTS = JSON_TEXT.filter(lambda t: t.startswith("{"))


def run(pieces: list[str], incremental: bool = True):
    cls = registry.get_tool_parser("hunyuan_a13b")
    return feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=True)


@st.composite
def a13b_output(draw) -> str:
    entries = []
    for _ in range(draw(st.integers(1, 3))):
        members = [f'"name":{draw(_WS)}{draw(json_string())}',
                   f'"arguments"{draw(_WS)}:{draw(_WS)}{draw(st.one_of(_OBJECTS, json_string()))}']
        if draw(st.booleans()):
            members.reverse()
        entries.append("{" + draw(_WS) + ("," + draw(_WS)).join(members) + draw(_WS) + "}")
    head = draw(st.sampled_from(["", "Let me check. ", "日本 😀\n", " "]))
    tail = draw(st.sampled_from(["", " done", "\n"]))
    return f"{head}<tool_calls>{draw(_WS)}[{draw(_WS)}{(',' + draw(_WS)).join(entries)}{draw(_WS)}]{draw(_WS)}</tool_calls>{tail}"


@settings(max_examples=300, deadline=None)
@given(a13b_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_a13b_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = run([text], incremental=False)
    got = run(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
        assert all(i and i.startswith("call_") and len(i) == 21 for i, _, _ in got.calls)
    else:
        once = run([text])
        assert (got.content, got.named_calls()) == (once.content, once.named_calls())
