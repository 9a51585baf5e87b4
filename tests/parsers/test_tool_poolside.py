"""Poolside V1 incremental calls: GLM-style pairs read as written, string-typed values
streaming, adding up to the one-shot answer for every split of a well-formed output."""

from __future__ import annotations

from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"},
    "opts": {"type": "object"}}}}}]
CTX = ParseContext(tools=TOOLS, tool_choice="auto")
_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<>"), max_size=12),
    st.sampled_from(["\n", " 0644 ", "12", "true", '{"a": [1, 2]}', "(1, 2)", "None", "a < b > c", "'x'"]),
)


def run(pieces: list[str], incremental: bool = True):
    cls = registry.get_tool_parser("poolside_v1")
    return feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=True)


@st.composite
def poolside_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n", "I will <tool"]))]
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "other", " spaced name "]))
        keys = draw(st.lists(st.sampled_from(["path", "content", "mode", "opts", "x"]), max_size=4, unique=True))
        pairs = "".join(f"<arg_key>{k}</arg_key>{draw(st.sampled_from(['', chr(10)]))}<arg_value>{draw(_VALUES)}</arg_value>"
                        f"{draw(st.sampled_from(['', chr(10)]))}" for k in keys)
        out.append(f"<tool_call>{draw(st.sampled_from(['', chr(10)]))}{name}{draw(st.sampled_from(['', chr(10)]))}{pairs}"
                   f"</tool_call>{draw(st.sampled_from(['', chr(10), ' between ']))}")
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(poolside_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_poolside_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = run([text], incremental=False)
    got = run(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    else:
        assert got == run([text])
    assert run(list(text)) == run([text])


@settings(max_examples=200, deadline=None)
@given(poolside_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = run(split(text, cuts))
    assert got == run([text]) == run(list(text))
    if not got.calls:
        assert got.content == (run([text], incremental=False).content or "")


def test_a_string_value_streams_as_it_arrives():
    p = registry.get_tool_parser("poolside_v1").incremental(CTX)
    steps = ["Ok <tool_call>write_file\n<arg_key>content</arg_key><arg_value>li", "ne 1\n",
             "</arg_value><arg_key>mode</arg_key><arg_value>7</arg_value></tool_call>"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{"), (None, '"content": "'), (None, "li")], [(None, "ne 1\\n")],
                    [(None, '"'), (None, ', "mode": 7'), (None, "}")]]
