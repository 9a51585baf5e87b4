"""Step-3 incremental calls: the calls block read as written, string values streaming stripped,
adding up to the one-shot answer for every split of a well-formed output."""

from __future__ import annotations

from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"},
    "ratio": {"type": "number"}, "force": {"type": "boolean"}, "opts": {"type": "object"}}}}}]
CTX = ParseContext(tools=TOOLS, tool_choice="auto")
B, E = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CB, CE, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<>"), max_size=12),
    st.sampled_from(["\n", " 0644 ", "12", "1.5", "true", "False", "null", '{"a": 1}', " a b ", "x\n\n"]),
)


def run(pieces: list[str], incremental: bool = True):
    cls = registry.get_tool_parser("step3")
    return feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=True)


@st.composite
def step3_output(draw) -> str:
    calls = []
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "other"]))
        keys = draw(st.lists(st.sampled_from(["path", "content", "mode", "ratio", "force", "opts", "x"]),
                             max_size=4, unique=True))
        params = "".join(f'<steptml:parameter name="{k}">{draw(_VALUES)}</steptml:parameter>' for k in keys)
        kind = draw(st.sampled_from(["function", " function\n"]))
        calls.append(f'{CB}{kind}{SEP}<steptml:invoke name="{name}">{params}</steptml:invoke>{CE}')
    head = draw(st.sampled_from(["", "Sure.", "  Let me look. \n", "Hi\n\n"]))
    tail = draw(st.sampled_from(["", " Done. ", "\n"]))
    return f"{head}{B}{draw(st.sampled_from(['', chr(10)]))}{chr(10).join(calls)}{E}{tail}"


@settings(max_examples=300, deadline=None)
@given(step3_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_step3_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = run([text], incremental=False)
    got = run(split(text, cuts))
    assert want.calls
    assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    assert run(list(text)) == got


@settings(max_examples=200, deadline=None)
@given(step3_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = run(split(text, cuts))
    assert got == run([text]) == run(list(text))
    if not got.calls:
        assert got.content == (run([text], incremental=False).content or "")


def test_no_call_leaves_the_output_as_content():
    for text in ("  plain", f"Hi {B}{CB}nope{SEP}x{CE}{E} after", f" {B}{E}"):
        assert run(list(text)).content == text == run([text], incremental=False).content


def test_a_string_value_streams_stripped_as_it_arrives():
    p = registry.get_tool_parser("step3").incremental(CTX)
    steps = [f'Ok{B}{CB}function{SEP}<steptml:invoke name="write_file"><steptml:parameter name="content"> li', "ne 1\n",
             'x </steptml:parameter><steptml:parameter name="mode">7</steptml:parameter>', f"</steptml:invoke>{CE}{E}"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{"), (None, '"content": "'), (None, "li")], [(None, "ne 1")],
                    [(None, "\\nx"), (None, '"'), (None, ', "mode": 7')], [(None, "}")]]
