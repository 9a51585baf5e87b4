"""DeepSeek V3 / V3.1 (``families/deepseek.py``) tool calls: one-shot results and chunking.

Known gaps: none known (the incremental streams are tested at the end; the R1 and V3
reasoning rows are in ``test_reasoning.py``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, feed, parse, parser_cls, split, vocab
from incremental import incremental, whole

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


def v3(name: str, args: str, kind: str = "function") -> str:
    return f"{CB}{kind}{SEP}{name}\n```json\n{args}\n```{CE}"


def v31(name: str, args: str) -> str:
    return f"{CB}{name}{SEP}{args}{CE}"


def run(name: str, pieces: list[str]) -> tuple[str, list[tuple[str, str]]]:
    fed = feed(lambda: registry.get_tool_parser(name)(ParseContext(tools=TOOLS, tool_choice="auto")), pieces)
    return fed.content, fed.named_calls()


W = '{"city": "東京"}'
PRETTY = '{\n  "x": 1\n}'
CUT = B + CB + "function" + SEP + "a\n```json\n" + '{"q":'
CASES = [
    ("deepseek_v3", B + v3("get_weather", W) + E, "", [("get_weather", W)]),
    ("deepseek_v3", "Done." + B + v3("a", "{}") + "\n" + v3("b", PRETTY) + "\n" + E + " after",
     "Done. after", [("a", "{}"), ("b", PRETTY)]),
    ("deepseek_v3", B + v3("a", '{"q": 1') + E, "", [("a", '{"q": 1')]),  # invalid JSON passes through
    ("deepseek_v3", "x" + B + v3("a", "{}", kind="tool") + E, "x" + B + v3("a", "{}", kind="tool") + E, []),
    ("deepseek_v3", "\n\n" + CUT, "", []),  # length cut mid-call
    ("deepseek_v3", B + v3("a", "{}"), "", [("a", "{}")]),  # no section end
    ("deepseek_v3", "a" + E + "b" + B + "c", "a" + E + "bb" + B + "c", []),  # vLLM repeats "b"
    ("deepseek_v3", v3("a", "{}") + " no section", v3("a", "{}") + " no section", []),
    ("deepseek_v3", "plain ☀️ text", "plain ☀️ text", []),
    ("deepseek_v31", "Hi" + B + v31("get_weather", W) + v31("b", "[1]") + E + "tail", "Hi",
     [("get_weather", W), ("b", "[1]")]),
    ("deepseek_v31", B + v31("a", "{bad") + E, "", [("a", "{bad")]),
    ("deepseek_v31", B + CB + "a" + SEP + '{"q": 1', "", []),  # missing end marker
    ("deepseek_v31", CB + "a\nb" + SEP + "{}" + CE + B, CB + "a\nb" + SEP + "{}" + CE, []),  # one-line names
    ("deepseek_v31", "\n\n", "\n\n", []),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert run(name, [text]) == (content, calls)


@settings(max_examples=80, deadline=None)
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 400), max_size=10))
def test_any_chunking_accumulates_to_one_shot(case, cuts):
    name, text, content, calls = case
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    assert run(name, [text[a:b] for a, b in zip(bounds, bounds[1:])]) == (content, calls)


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v31"])
def test_snapshot_restore_continues_identically(name):
    cls = registry.get_tool_parser(name)
    ctx = ParseContext(tools=TOOLS, tool_choice="auto")
    text = "Hi" + B + (v3("a", "{}") if name == "deepseek_v3" else v31("a", "{}")) + E
    first = cls(ctx)
    out = first.feed(text[:10], []).content
    second = cls(ctx)
    second.restore(first.snapshot())
    d, f = second.feed(text[10:], []), second.finish()
    assert out + d.content + f.content == "Hi"
    assert [(t.name, t.arguments) for t in f.tool_calls] == [("a", "{}")]


def test_peer_spellings_resolve():
    for alias in ("deepseekv3", "deepseek"):
        assert registry.get_tool_parser(alias) is registry.get_tool_parser("deepseek_v3")
    for alias in ("deepseekv31", "deepseek31", "deepseek_v3_1", "deepseekv3.1"):
        assert registry.get_tool_parser(alias) is registry.get_tool_parser("deepseek_v31")


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_deepseek_r1():
    c = ctx("deepseek-v3")
    assert parse("deepseek_r1", "", c) == ("", None)  # reasoning present even when empty
    assert parse("deepseek_r1", "a</think>", c) == ("a", None)
    assert parse("deepseek_r1", "a</think>\n\nb</think>", c) == ("a", "\n\nb</think>")
    assert parse("deepseek_r1", "x<think>a</think>b", c) == ("a", "b")  # text before start dropped
    assert parse("deepseek_r1", "no end marker", c) == ("no end marker", None)
    # A tool call inside reasoning does not end it (R1 has no implicit end).
    tc = "a<｜tool▁calls▁begin｜>b"
    assert parse("deepseek_r1", tc, c) == (tc, None)


def test_deepseek_r1_start_window():
    """A start marker past the window is text: the one bounded deviation from vLLM."""
    c = ctx("deepseek-v3")
    late = "x" * 100 + "<think>a</think>b"
    assert parse("deepseek_r1", late, c) == ("x" * 100 + "<think>a", "b")


def test_deepseek_v3_switch():
    c = ctx("deepseek-v3")
    assert parse("deepseek_v3", "<think>a</think>b", c) == (None, "<think>a</think>b")
    assert parse("deepseek_v3", "", c) == (None, "")  # identity keeps empty content
    on = ctx("deepseek-v3", {"thinking": True})
    assert parse("deepseek_v3", "a</think>b", on) == ("a", "b")
    assert parse("holo2", "a</think>b", ctx("deepseek-v3")) == ("a", "b")
    v = vocab("deepseek-v3")
    ids = v.encode("<｜Assistant｜><think>\n")
    assert parser_cls("deepseek_v3").reasoning_ended_in_prompt(ids, c) is True
    assert parser_cls("deepseek_v3").reasoning_ended_in_prompt(ids, on) is False


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@st.composite
def deepseek_output(draw, v3: bool) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n", " "])), B]
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["get_weather", "f"]))
        args = draw(st.one_of(JSON_TEXT, st.sampled_from(["{}", "not json", "a\n``b", "```", "\n"])))
        if v3:
            out.append(f"{CB}function{SEP}{name}\n```json\n{args}\n```{CE}")
        else:
            out.append(f"{CB}{name}{SEP}{args}{CE}")
        out.append(draw(st.sampled_from(["", "\n"])))
    out.append(E if draw(st.integers(0, 3)) else "")
    out.append(draw(st.sampled_from(["", " tail", "\n"])))
    return "".join(out)


@pytest.mark.parametrize("family", ["deepseek_v3", "deepseek_v31"])
def test_deepseek_streams_add_up_to_the_one_shot_answer(family):
    @settings(max_examples=250, deadline=None)
    @given(deepseek_output(family == "deepseek_v3"), st.lists(st.integers(0, 10_000), max_size=10))
    def check(text, cuts):
        want = whole(family, text)
        got = incremental(family, split(text, cuts))
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
        assert incremental(family, list(text), restore=False) == got

    check()
