"""InternLM (internlm, interns1) (``families/internlm.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- none known for the incremental stream (``--tool-call-streaming incremental``, tested at the end);
- where vLLM fails the request with an uncaught error, the text is kept as content.
"""

from __future__ import annotations

from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import split
from incremental import CTX, restored
from json_families import family_tests, one

from tokenbridge.parsers import registry

from parsers.engine.test_json_stream import JSON_TEXT, json_string


CASES = {
    'internlm': [
        ('plain',
         'plain', []),
        ('<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Let me check.<|action_start|><|plugin|>\n{"name": "search", "arguments": {"q": "東京 🚀"}}<|action_end|>',
         'Let me check.', [('search', '{"q": "東京 🚀"}')]),
        ('<|action_start|><|plugin|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|action_start|><|plugin|>{"name": "f", "parameters": {"a": 1}, "arguments": {"b": 2}}<|action_end|>',
         '', [('f', '{"a": 1}')]),
        ('<|action_start|><|plugin|>{"name": "f"}<|action_end|>',
         '', [('f', '{}')]),
        ('<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci',
         '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci', []),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)


def test_internlm_error_cases_stay_content():
    """vLLM fails the request (uncaught error); the text is kept as content instead."""
    for text in (
        '<|action_start|><|plugin|>{"name": "f", "parameters": {}}<|action_start|><|plugin|>{}',
        '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci',
    ):
        assert one("internlm", text) == (text, [])
        assert one("interns1", text) == (text, [])


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# InternLM2 incremental calls: hermes' reading between the action markers, adding up to the
# one-shot answer for every split of a well-formed output.

_WS = st.text(" \n", max_size=2)

BOT, EOT = "<|action_start|><|plugin|>", "<|action_end|>"

stream = partial(restored, "internlm")


@st.composite
def internlm_output(draw) -> str:
    members = [f'"name"{draw(_WS)}:{draw(_WS)}{draw(json_string())}']
    key = draw(st.sampled_from(["parameters", "arguments", None]))
    if key:
        members.append(f'"{key}"{draw(_WS)}:{draw(_WS)}{draw(JSON_TEXT)}')
    if draw(st.booleans()):
        members.reverse()
    head = draw(st.sampled_from(["", "Let me search.\n", "日本 😀 <|action"]))
    tail = draw(st.sampled_from(["", "\n", "<|im_end|>"]))
    end = EOT if draw(st.integers(0, 4)) else ""
    return f"{head}{BOT}{draw(_WS)}{{{draw(_WS)}{', '.join(members)}}}{draw(_WS)}{end}{tail}"


@settings(max_examples=300, deadline=None)
@given(internlm_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_internlm_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == stream([text])
    assert stream(list(text)) == stream([text])


def test_internlm_sends_the_name_then_the_parameters():
    p = registry.get_tool_parser("internlm").incremental(CTX)
    steps = [f'Hi {BOT}{{"name": "f", "para', 'meters": {"q": "x', 'y"}}', EOT]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("f", "")], [(None, '{"q": "x')], [(None, 'y"}')], []]
