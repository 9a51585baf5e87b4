"""``tool_choice=required`` and named choices (``parsers/choice.py``): the streamed required-choice
parser's deltas add up to the one-shot JSON-array answer for every split.

Known gaps: none known (the one-shot answers against vLLM are the parity corpus's ``tool_choice``
cases, ``tests/server/test_parity_corpus.py``).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import feed, split
from incremental import CTX, WS

from tokenbridge.parsers.choice import RequiredToolChoice, StreamedRequiredToolChoice

from parsers.engine.test_json_stream import JSON_TEXT, json_string


@st.composite
def required_output(draw) -> str:
    items = []
    for _ in range(draw(st.integers(0, 3))):
        members = [f'"name": {draw(json_string())}']
        if draw(st.integers(0, 4)):
            members.append(f'"parameters"{draw(WS)}:{draw(WS)}{draw(st.one_of(JSON_TEXT, st.just("null")))}')
        if draw(st.booleans()):
            members.reverse()
        items.append("{" + ", ".join(members) + "}")
    return draw(WS) + "[" + ("," + draw(WS)).join(items) + "]" + draw(WS)


@settings(max_examples=300, deadline=None)
@given(required_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_required_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = feed(lambda: RequiredToolChoice(CTX), [text])
    got = feed(lambda: StreamedRequiredToolChoice(CTX), split(text, cuts), restore=True)
    if want.calls or text.strip() == "[]":
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert feed(lambda: StreamedRequiredToolChoice(CTX), list(text)) == feed(lambda: StreamedRequiredToolChoice(CTX), [text])
