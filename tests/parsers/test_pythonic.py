"""Pythonic tool calls (``families/pythonic.py``: pythonic, llama4_pythonic, olmo3): one-shot
results and chunking.

Known gaps:
- none known for the incremental stream (``--tool-call-streaming incremental``, tested at the end).
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import feed, split
from incremental import CTX, incremental, py_value, whole

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.families.pythonic import looks_like_call_list

TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("get_weather", "search")]


def run(name: str, pieces: list[str]) -> tuple[str, list[tuple[str, str]]]:
    fed = feed(lambda: registry.get_tool_parser(name)(ParseContext(tools=TOOLS, tool_choice="auto")), pieces)
    return fed.content, fed.named_calls()


def args(**kw) -> str:
    return json.dumps(kw, ensure_ascii=False)


CASES = [
    # (parser, output, content, calls)
    ("pythonic", "[get_weather(city='Paris')]", "", [("get_weather", args(city="Paris"))]),
    ("pythonic", "[get_weather(city='東京'), search(q=\"a\", n=-3, f=true, x=None, t=(1, 2))]", "",
     [("get_weather", args(city="東京")), ("search", args(q="a", n=-3, f=True, x=None, t=[1, 2]))]),
    ("pythonic", "Done.[search(q='x')]", "Done.[search(q='x')]", []),
    ("pythonic", "[search(q='x')] Sure!", "[search(q='x')] Sure!", []),
    ("pythonic", "[search(q='emoji 🚀 test'", "[search(q='emoji 🚀 test'", []),  # no end / length cut
    ("pythonic", "[search(q=foo)]", "[search(q=foo)]", []),  # not a literal
    ("pythonic", "[unknown_fn(a=1)]", "", [("unknown_fn", args(a=1))]),
    ("pythonic", "[get_weather(x={'k': [1, 2.5]}, y={1, 2})]", "", [("get_weather", args(x={"k": [1, 2.5]}, y=[1, 2]))]),
    ("pythonic", "[a.b(x=1)]", "[a.b(x=1)]", []),  # dotted names fail the call-list shape
    ("pythonic", "[f()]", "", [("f", "{}")]),
    ("pythonic", "[f(a=1)]\n[g(b=2)]", "", [("f", args(a=1))]),  # only the first statement counts
    ("pythonic", "[f(1)]", "[f(1)]", []),
    ("pythonic", "", "", []),
    ("llama4_pythonic", "<|python_start|>[f(a=1)]<|python_end|>", "", [("f", args(a=1))]),
    ("llama4_pythonic", "<|python_start|>hi<|python_end|>", "hi", []),
    ("llama4_pythonic", "<|python_end|>hi", "<|python_end|>hi", []),
    ("olmo3", "get_weather(city='Paris')\nsearch(q=null)", "",
     [("get_weather", args(city="Paris")), ("search", args(q=None))]),
    ("olmo3", "Hi <function_calls>f(a=1)</function_calls>", "", [("f", args(a=1))]),
    ("olmo3", "Just text.", "Just text.", []),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert run(name, [text]) == (content, calls)


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_any_chunking_accumulates_to_one_shot(case, cuts):
    name, text, content, calls = case
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    assert run(name, pieces) == (content, calls)


def test_snapshot_restore_continues_identically():
    cls = registry.get_tool_parser("pythonic")
    ctx = ParseContext(tools=TOOLS, tool_choice="auto")
    first = cls(ctx)
    first.feed("[get_weather(ci", [])
    second = cls(ctx)
    second.restore(first.snapshot())
    second.feed("ty='Paris')]", [])
    assert second.finish().tool_calls[0].arguments == args(city="Paris")


@pytest.mark.parametrize("text,ok", [
    ("[f()]", True), ("[f(), g()]", True), ("[f() g()]", True), ("[f() , g()]", False),
    ("[f(a=1", False), ("[f(a=1) ]", True), ("[ f()]", False), ("[f(1)]", False), ("x[f()]", False),
])
def test_call_list_shape(text, ok):
    assert looks_like_call_list(text) is ok


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# Incremental pythonic streams (``engine.python_calls``): the name when its ``(`` is read, then
# argument deltas that add up byte for byte to the one-shot answer for every split of a
# well-formed call list; a malformed or truncated list gets the documented answer for every split.

_WS = st.sampled_from(["", " ", "\n  ", "\t"])


@st.composite
def call_list(draw) -> str:
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["f", "get_weather", "api.search", "città"]))
        # the call-list pattern wants the first keyword of the first call to be [a-zA-Z]\w*
        first = st.sampled_from(["a", "city", "b2", "_x", "ünit"] if calls or draw(st.integers(0, 5)) == 0 else ["a", "city"])
        keys = draw(st.lists(first, unique=True, max_size=3))
        args = [f"{k}{draw(_WS) if calls else ''}={draw(_WS) if calls else ''}{draw(py_value())}" for k in keys]
        trailing = "," if args and draw(st.integers(0, 4)) == 0 else ""
        calls.append(f"{name}({', '.join(args)}{trailing})")
    return "[" + ("," + draw(_WS)).join(calls) + "]" + draw(st.sampled_from(["", "\n", " "]))


@settings(max_examples=400, deadline=None)
@given(call_list(), st.lists(st.integers(0, 10_000), max_size=10))
def test_pythonic_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("pythonic", text)
    got = incremental("pythonic", split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:  # outside what vLLM accepts: any split gives the same answer
        assert got == incremental("pythonic", [text])
    assert incremental("pythonic", list(text), restore=False) == incremental("pythonic", [text])


@settings(max_examples=200, deadline=None)
@given(call_list(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_list_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = incremental("pythonic", split(text, cuts))
    assert got == incremental("pythonic", [text]) == incremental("pythonic", list(text), restore=False)
    want = whole("pythonic", text)
    if not got.calls:  # nothing was sent: the text is content, as in the one-shot answer
        assert got.content == (want.content or "")


def test_name_when_its_paren_is_read_then_arguments_as_decided():
    p = registry.get_tool_parser("pythonic").incremental(CTX)
    steps = ["[write_file(pa", "th='a.py', content='x", "=1\\n", "y', mode=0o6", "44), g()]"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps] + [p.finish().tool_calls]
    assert sent == [[("write_file", "{")], [(None, '"path": "a.py", "content": "x')], [(None, "=1\\n")],
                    [(None, 'y", "mode": ')], [(None, "420}"), ("g", "{}")], []]


@pytest.mark.parametrize("text, content, calls", [
    # not a list, or a list whose first call never opens: content, as in the one-shot answer
    ("Just prose.", "Just prose.", []),
    ("[1, 2]", "[1, 2]", []),
    ("[ f(a=1)]", "[ f(a=1)]", []),
    ("[f (a=1)]", "[f (a=1)]", []),
    # a positional argument: the call stands, the rest is content
    ("[f(1)]", "1)]", [("f", "{")]),
    ("[f(a=1, a=2)]", "a=2)]", [("f", '{"a": 1')]),
    ("[f(a=x)]", "x)]", [("f", '{"a": ')]),
    ("[f(a=b'x')]", "b'x')]", [("f", '{"a": ')]),
    # a trailing comma after the last call
    ("[f(a=1),]", "]", [("f", '{"a": 1}')]),
    # truncated: the calls sent stand, held text is dropped
    ("[f(a='abc", "", [("f", '{"a": "abc')]),
    ("[f(a=12", "", [("f", '{"a": ')]),
    # text after the list is dropped
    ("[f(a=1)] and more", "", [("f", '{"a": 1}')]),
])
def test_malformed_lists_get_the_documented_answer_for_every_split(text, content, calls):
    for pieces in ([text], list(text), split(text, [3, 7, 11])):
        got = incremental("pythonic", pieces)
        assert (got.content, got.named_calls()) == (content, calls)


@pytest.mark.parametrize("text, content, calls", [
    ("<|python_start|>[f(a='x<|python_end|>y')]<|python_end|>", "", [("f", '{"a": "xy"}')]),
    ("<|python_start|>hello<|python_end|> there", "hello there", []),
    ("<|python_st", "<|python_st", []),
    ("[f()]", "", [("f", "{}")]),
])
def test_llama4_python_tags(text, content, calls):
    assert (whole("llama4_pythonic", text).content or "", whole("llama4_pythonic", text).named_calls()) == (
        content, calls)
    for pieces in ([text], list(text)):
        got = feed(lambda: registry.get_tool_parser("llama4_pythonic").incremental(CTX), pieces, restore=True)
        assert (got.content, got.named_calls()) == (content, calls)


def test_a_long_call_keeps_a_small_state():
    p = registry.get_tool_parser("pythonic").incremental(CTX)
    body = "[write_file(path='a.py', content='" + "print(1)\\n" * 3000 + "')]"
    sizes = []
    for k in range(0, len(body), 5):
        p.feed(body[k : k + 5], [])
        sizes.append(len(msgspec.msgpack.encode(p.snapshot())))
    assert max(sizes) < 120


def test_a_bad_state_is_refused():
    p = registry.get_tool_parser("pythonic").incremental(CTX)
    p.feed("[f(a=[1, ", [])
    snap = msgspec.to_builtins(p.snapshot())
    snap[4][1] = "LCx"
    with pytest.raises(ValueError):
        registry.get_tool_parser("pythonic").incremental(CTX).restore(snap)


def test_a_repeated_dict_key_is_sent_again():
    """json.loads keeps the last value at the first key's place, as the one-shot dict does."""
    import json

    got = incremental("pythonic", list("[f(a={'k': 1, 'k': 2})]"))
    assert got.named_calls() == [("f", '{"a": {"k": 1, "k": 2}}')]
    assert json.loads(got.calls[0][2]) == json.loads(whole("pythonic", "[f(a={'k': 1, 'k': 2})]").calls[0][2])
