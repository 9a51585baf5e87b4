"""InternLM2 incremental calls: hermes' reading between the action markers, adding up to the
one-shot answer for every split of a well-formed output."""

from __future__ import annotations

from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT, json_string

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
_WS = st.text(" \n", max_size=2)
BOT, EOT = "<|action_start|><|plugin|>", "<|action_end|>"


def run(pieces: list[str], incremental: bool = True):
    cls = registry.get_tool_parser("internlm")
    return feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=True)


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
    want = run([text], incremental=False)
    got = run(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == run([text])
    assert run(list(text)) == run([text])


def test_internlm_sends_the_name_then_the_parameters():
    p = registry.get_tool_parser("internlm").incremental(CTX)
    steps = [f'Hi {BOT}{{"name": "f", "para', 'meters": {"q": "x', 'y"}}', EOT]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("f", "")], [(None, '{"q": "x')], [(None, 'y"}')], []]
