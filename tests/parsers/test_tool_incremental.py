"""Incremental tool-call streaming: id and name as soon as known, then argument deltas that add
up byte for byte to the one-shot answer for every split of a well-formed output; a malformed or
truncated output gets the documented answer, the same for every split."""

from __future__ import annotations

import json

import msgspec
import pytest
from feeding import accumulate, feed
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.json_stream import canonical

from parsers.engine.test_json_stream import JSON_TEXT, json_string

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
_WS = st.text(" \n", max_size=2)


def whole(name: str, text: str):
    return feed(lambda: registry.get_tool_parser(name)(CTX), [text])


def incremental(name: str, pieces: list[str], restore: bool = True):
    return feed(lambda: registry.get_tool_parser(name).incremental(CTX), pieces, restore=restore)


def split(text: str, cuts: list[int]) -> list[str]:
    cuts = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


@st.composite
def hermes_output(draw, start="<tool_call>", end="</tool_call>") -> str:
    out = [draw(st.sampled_from(["", "Sure.\n", "Let me check <tool", "日本 😀 "]))]
    for _ in range(draw(st.integers(1, 3))):
        args = draw(JSON_TEXT)
        name = draw(json_string())
        members = [f'"name"{draw(_WS)}:{draw(_WS)}{name}', f'"arguments"{draw(_WS)}:{draw(_WS)}{args}']
        if draw(st.booleans()):
            members.insert(draw(st.integers(0, 2)), f'"id": {draw(JSON_TEXT)}')
        if draw(st.booleans()):
            members.reverse()
        out.append(f"{start}{draw(_WS)}{{{draw(_WS)}{', '.join(members)}}}{draw(_WS)}")
        out.append(end if draw(st.integers(0, 4)) else "")
        out.append(draw(st.sampled_from(["", "\n", " between "])))
    return "".join(out)


def _well_formed(text: str, start="<tool_call>") -> bool:
    """Every call body is one JSON object (the one-shot answer has calls)."""
    return bool(whole("hermes", text).calls)


@settings(max_examples=300, deadline=None)
@given(hermes_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_hermes_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("hermes", text)
    got = incremental("hermes", split(text, cuts))
    if want.calls:
        assert got.named_calls() == want.named_calls()
        assert got.content == want.content
    else:  # the one-shot answer found the output malformed; any split gives the same answer
        assert got == incremental("hermes", [text])
    assert incremental("hermes", list(text), restore=False) == incremental("hermes", [text])


def test_name_first_then_arguments_as_written():
    p = registry.get_tool_parser("hermes").incremental(CTX)
    steps = ['<tool_call>\n{"name": "write_file", "argu', 'ments": {"path": "a.py", "content": "x', "=1\\n",
             'y"}}\n</tool_call>']
    deltas = [p.feed(s, []) for s in steps] + [p.finish()]
    sent = [[(tc.name, tc.arguments) for tc in d.tool_calls] for d in deltas]
    assert sent == [[("write_file", "")], [(None, '{"path": "a.py", "content": "x')], [(None, "=1\\n")],
                    [(None, 'y"}')], []]


@pytest.mark.parametrize("text, content, calls", [
    # invalid JSON after the name: the call stands, the text from the breaking byte is content
    ('<tool_call>{"name": "f", "arguments": {"a": tru}}</tool_call>', 'tru}}</tool_call>', [("f", '{"a": ')]),
    # truncated: the call stands with what was sent; held bytes are dropped
    ('Hi <tool_call>{"name": "f", "arguments": {"a": 12', "Hi ", [("f", '{"a": ')]),
    # a name that is not a string: nothing was opened, the call's text is content
    ('<tool_call>{"name": 3, "arguments": {}}</tool_call> x', '<tool_call>{"name": 3, "arguments": {}}</tool_call> x', []),
    # no arguments: the call stands (name sent), the closing brace on is content
    ('<tool_call>{"name": "f"}</tool_call>', "}</tool_call>", [("f", "")]),
    # text after the object inside the call; later calls are content too
    ('<tool_call>{"name": "f", "arguments": {}} x</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>',
     'x</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>', [("f", "{}")]),
    # an end marker inside the JSON
    ('<tool_call>{"name": "f", "arguments": {"a": "</tool_call>"}}', '</tool_call>"}}', [("f", '{"a": "')]),
])
def test_malformed_output_gets_the_documented_answer_for_every_split(text, content, calls):
    for pieces in ([text], list(text), split(text, [5, 17, 30])):
        got = incremental("hermes", pieces)
        assert (got.content, got.named_calls()) == (content, calls)


def test_a_long_call_keeps_a_small_state():
    p = registry.get_tool_parser("hermes").incremental(CTX)
    body = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.py", "content": "' + "print(1)\\n" * 3000
    sizes = []
    for k in range(0, len(body), 5):
        p.feed(body[k : k + 5], [])
        sizes.append(len(msgspec.msgpack.encode(p.snapshot())))
    assert max(sizes) < 100


def test_whole_mode_is_unchanged_by_the_flag():
    text = '<tool_call>{"name": "f", "arguments": {"a": 1.50}}</tool_call>'
    assert whole("hermes", text).named_calls() == [("f", canonical('{"a": 1.50}'))]
    assert json.loads(incremental("hermes", list(text)).calls[0][2]) == {"a": 1.5}


@st.composite
def llama_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure: ", "<|python_tag|>"]))]
    for k in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(["arguments", "parameters"]))
        members = [f'"name"{draw(_WS)}:{draw(_WS)}{draw(json_string())}', f'"{key}"{draw(_WS)}:{draw(_WS)}{draw(JSON_TEXT)}']
        if draw(st.booleans()):
            members.reverse()
        out.append(("; " if k else "") + f"{{{draw(_WS)}{', '.join(members)}}}")
    out.append(draw(st.sampled_from(["", " done", "{", "{}"])))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(llama_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_llama_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("llama3_json", text)
    got = incremental("llama3_json", split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == incremental("llama3_json", [text])
    assert incremental("llama3_json", list(text), restore=False) == incremental("llama3_json", [text])


@pytest.mark.parametrize("text, content, calls", [
    ("Just prose, no call.", "Just prose, no call.", []),
    ('Here: {"a": 1} and more', 'Here: {"a": 1} and more', []),
    ('{"name": "f", "parameters": {"x": [1, 2]}}{"name": "g", "parameters": {}}', '{}}', [("f", '{"x": [1, 2]}')]),
    ('{"name": "f", "parameters": {"x": 1', "", [("f", '{"x": ')]),
])
def test_llama_documented_answers(text, content, calls):
    for pieces in ([text], list(text)):
        got = incremental("llama3_json", pieces)
        assert (got.content, got.named_calls()) == (content, calls)
