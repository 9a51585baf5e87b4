"""``engine/arguments.py``: a call's arguments written member by member add up, byte for byte,
to ``json.dumps`` of the one-shot arguments whatever pieces the values arrive in; a streamed
value is sent as it arrives, a held one at its end, and a value the call's end cuts is closed if
it streams and dropped if held. The families' readers are tested in their own modules
(``test_poolside.py``, ``test_functiongemma.py``, ``test_step.py``)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tokenbridge.parsers.base import Delta, ParseContext, ParserState
from tokenbridge.parsers.engine.arguments import StreamedArguments


class WriterState(ParserState):
    buf: str = ""
    index: int = -1
    members: int = 0
    key: str = ""
    value: str = ""
    streaming: bool = False
    started: bool = False


class Writer(StreamedArguments):
    """The writer alone: a held value converts as JSON when it parses (else it is dropped); one
    that starts with ``'`` is text from there, as FunctionGemma decides while it reads (not with
    stripped values, a pair no family has)."""

    State = WriterState

    def __init__(self, strips: bool = False) -> None:
        super().__init__(ParseContext())
        self.strips_values = strips
        self.load(WriterState())

    def _is_text(self, held: str) -> bool:
        return not self.strips_values and held.startswith("'")

    def _converted(self, raw: str) -> str | None:
        try:
            return json.dumps(json.loads(raw), ensure_ascii=False)
        except ValueError:
            return None


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
MEMBERS = st.lists(st.tuples(TEXT, st.one_of(TEXT, st.integers().map(str), st.just("[1, {\"a\": null}]")),
                             st.booleans(), st.lists(st.integers(0, 20), max_size=3)),
                   max_size=4, unique_by=lambda m: m[0])


def write(members, strips: bool = False, cut_last: bool = False) -> str:
    """The arguments sent for ``members``, each value in the pieces its cuts make."""
    w, out = Writer(strips), Delta(tool_calls=[])
    w._open_call("f", out)
    for k, (key, value, streams, cuts) in enumerate(members):
        w._begin_value(key, streams, out)
        bounds = sorted({min(c, len(value)) for c in cuts})
        for a, b in zip([0, *bounds], [*bounds, len(value)]):
            w._value_text(value[a:b], out)
        if not (cut_last and k == len(members) - 1):
            w._end_value(out)
    w._close_call(cut_last and bool(members), out)
    assert out.tool_calls[0].name == "f" and all(tc.index == 0 for tc in out.tool_calls)
    return "".join(tc.arguments for tc in out.tool_calls)


def expected(members, strips: bool = False) -> dict:
    want = {}
    for key, value, streams, _ in members:
        if streams or (not strips and value.startswith("'")):
            want[key] = value.strip() if strips else value
        else:
            try:
                want[key] = json.loads(value)
            except ValueError:
                pass
    return want


@given(MEMBERS, st.booleans())
def test_the_members_add_up_to_the_one_shot_arguments(members, strips):
    assert write(members, strips) == json.dumps(expected(members, strips), ensure_ascii=False)


@given(MEMBERS.filter(bool))
def test_a_value_the_call_end_cuts_is_closed_if_it_streams_else_dropped(members):
    args = write(members, cut_last=True)
    *done, (key, value, streams, _) = members
    want = expected(done)
    if streams or value.startswith("'"):
        want[key] = value
    assert args == json.dumps(want, ensure_ascii=False)


def test_a_streamed_value_is_sent_as_it_arrives():
    w, out = Writer(), Delta(tool_calls=[])
    w._open_call("f", out)
    w._begin_value("path", True, out)
    w._value_text('a"', out)
    assert [tc.arguments for tc in out.tool_calls] == ["{", '"path": "', 'a\\"']
