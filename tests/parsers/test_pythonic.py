"""Pythonic tool calls (``families/pythonic.py``: pythonic, llama4_pythonic, olmo3): one-shot
results and chunking.

Known gaps:
- tool calls stream whole (an incremental stream needs a streaming reader of Python literals).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import feed
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
