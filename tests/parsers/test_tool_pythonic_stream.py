"""Incremental pythonic streams (``engine.python_calls``): the name when its ``(`` is read, then
argument deltas that add up byte for byte to the one-shot answer for every split of a
well-formed call list; a malformed or truncated list gets the documented answer for every split."""

from __future__ import annotations

import msgspec
import pytest
from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
_WS = st.sampled_from(["", " ", "\n  ", "\t"])
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def whole(name: str, text: str):
    return feed(lambda: registry.get_tool_parser(name)(CTX), [text])


def incremental(name: str, pieces: list[str], restore: bool = True):
    return feed(lambda: registry.get_tool_parser(name).incremental(CTX), pieces, restore=restore)


@st.composite
def py_string(draw) -> str:
    """A Python string literal for random text, in one of its spellings."""
    value = draw(st.one_of(_TEXT, st.sampled_from(["", "a'b\"c", "x\\y", "\n\t", "{}", "😀 日本", "a\r\nb"])))
    form = draw(st.sampled_from(["repr", "double", "triple", "raw", "concat", "escapes", "f"]))
    if form == "double" and "\\" not in value and '"' not in value and "\n" not in value and "\r" not in value:
        return '"' + value + '"'
    if form == "triple" and "\\" not in value and "'" not in value and "\r" not in value:
        return "'''" + value + "'''"
    if form == "raw" and "\\" not in value and "'" not in value and "\n" not in value and "\r" not in value:
        return "r'" + value + "'"
    if form == "f" and not set(value) & set("{}\\'\n\r"):
        return "f'" + value + "'"
    if form == "concat" and len(value) > 1:
        k = draw(st.integers(1, len(value) - 1))
        return repr(value[:k]) + draw(st.sampled_from(["", " ", "\n"])) + repr(value[k:])
    if form == "escapes":
        return '"' + "".join(draw(st.sampled_from([f"\\x{ord(c):02x}", f"\\u{ord(c):04x}", f"\\{ord(c):o}"]))
                             if ord(c) < 256 else c for c in value if c not in '"\\\n\r') + '"'
    return repr(value)


_NUMBERS = st.one_of(
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0x1F", "0o17", "0b101", "1_000", "1e400", "-1e400", "1.", ".5", "1E-3", "-0", "-0.0", "+3", "- 2"]),
)
_NAMES = st.sampled_from(["True", "False", "None", "true", "false", "null"])


def py_value(depth: int = 2):
    scalar = st.one_of(py_string(), _NUMBERS, _NAMES)
    if depth == 0:
        return scalar
    inner = py_value(depth - 1)
    keys = st.one_of(py_string(), st.sampled_from(["1", "2.5", "False", "None", "0x10"]))
    return st.one_of(
        scalar,
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(scalar, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"),
        st.lists(scalar, min_size=1, max_size=3).map(lambda xs: "{" + ", ".join(xs) + "}"),
        # distinct keys (a repeated key is sent again: see test_a_repeated_dict_key_is_sent_again)
        st.lists(st.tuples(keys, inner), max_size=3, unique_by=lambda kv: eval("(" + kv[0] + ")")).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        scalar.map(lambda x: f"({x})"),
    )


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
