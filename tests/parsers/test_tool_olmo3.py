"""Olmo 3 incremental calls: one call per line (or per line of a ``<function_calls>`` block),
read as vLLM's list of them, adding up to the one-shot answer for every split of a well-formed
output; other outputs get the same answer for every split."""

from __future__ import annotations

from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.test_tool_pythonic_stream import py_value

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
_WS = st.sampled_from(["", " ", "\t"])


def run(pieces: list[str], incremental: bool = True):
    cls = registry.get_tool_parser("olmo3")
    return feed(lambda: (cls.incremental if incremental else cls)(CTX), pieces, restore=True)


@st.composite
def olmo3_output(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["f", "get_weather", "search"]))
        keys = draw(st.lists(st.sampled_from(["a", "city", "q"]), unique=True, max_size=3))
        # values on one line: vLLM joins the lines with ", "
        args = [f"{k}={draw(py_value(1).filter(lambda v: chr(10) not in v and chr(13) not in v))}" for k in keys]
        lines.append(f"{draw(_WS)}{name}({', '.join(args)}){draw(_WS)}")
    body = draw(st.sampled_from(["\n", "\n\n", "\r\n"])).join(lines)
    if draw(st.booleans()):
        head = draw(st.sampled_from(["", "Let me check.\n", "Sure: "]))
        tail = draw(st.sampled_from(["", "\n", " done"]))
        return f"{head}<function_calls>\n{body}\n</function_calls>{tail}"
    return draw(st.sampled_from(["", "\n"])) + body + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=300, deadline=None)
@given(olmo3_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_olmo3_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = run([text], incremental=False)
    got = run(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    else:
        assert got == run([text])
    assert run(list(text)) == run([text])


@settings(max_examples=200, deadline=None)
@given(olmo3_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_olmo3_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = run(split(text, cuts))
    assert got == run([text]) == run(list(text))
    if not got.calls:
        assert got.content == (run([text], incremental=False).content or "")


def test_prose_is_content():
    for text in ("Just prose.\nTwo lines.", "<function_calls>\nnot a call\n</function_calls>"):
        assert run(list(text)).content == text == run([text], incremental=False).content
