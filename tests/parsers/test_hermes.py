"""Hermes and LongCat (``families/hermes.py``) tool calls: vLLM 0.33's non-streaming rules, and chunking
invariance of the streaming parser.

Known gaps: none known for the whole-call answers (the incremental stream, with its documented
answers for malformed output, is in ``test_tool_incremental.py``).
"""

from __future__ import annotations

import msgspec
import pytest

from json_families import TOOLS, chunking_test, one
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext


W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
S = '{"name": "search", "arguments": {"q": "東京 🚀"}}'

HERMES_CASES = [
    # (text, content, calls)
    ("plain answer", "plain answer", []),
    ("", "", []),
    (f"<tool_call>\n{W}\n</tool_call>", "", [("get_weather", '{"city": "Paris"}')]),
    (f"Sure.\n<tool_call>{W}</tool_call>\n<tool_call>{S}</tool_call> after",
     "Sure.\n", [("get_weather", '{"city": "Paris"}'), ("search", '{"q": "東京 🚀"}')]),
    (f"<tool_call>{W}", "", [("get_weather", '{"city": "Paris"}')]),  # missing end marker
    ('x<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>',
     'x<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>', []),  # invalid JSON
    ('<tool_call>{"name": "get_weather", "arguments": {"ci', '<tool_call>{"name": "get_weather", "arguments": {"ci', []),
    (f"<tool_call>{W}</tool_call><tool_call>[1]</tool_call>",
     f"<tool_call>{W}</tool_call><tool_call>[1]</tool_call>", []),  # one bad call spoils all
    ('<tool_call>{"name": "nope", "arguments": {"a": "\\u00e9"}}</tool_call>', "", [("nope", '{"a": "é"}')]),
    ('<tool_call>{"name": "f"}</tool_call>', '<tool_call>{"name": "f"}</tool_call>', []),
    ("<tool_call></tool_call>", "<tool_call></tool_call>", []),
    ('<tool_call>{"name": 3, "arguments": {}}</tool_call>', '<tool_call>{"name": 3, "arguments": {}}</tool_call>', []),
    ('<tool_call>{"name":"f","arguments":"raw"}</tool_call>', "", [("f", '"raw"')]),
    ("a <tool_ b", "a <tool_ b", []),
]


@pytest.mark.parametrize("text,content,calls", HERMES_CASES)
def test_hermes(text, content, calls):
    assert one("hermes", text) == (content, calls)
    assert one("qwen3_json", text) == (content, calls)


def test_longcat():
    text = f"hi<longcat_tool_call>{W}</longcat_tool_call>"
    assert one("longcat", text) == ("hi", [("get_weather", '{"city": "Paris"}')])
    assert one("longcat", f"<tool_call>{W}</tool_call>")[1] == []


def test_flags():
    for name in ("hermes", "longcat"):
        assert registry.get_tool_parser(name).supports_required_and_named is False


def test_streams_content_before_marker():
    p = registry.get_tool_parser("hermes")(ParseContext(tools=TOOLS, tool_choice="auto"))
    assert p.feed("Hello <tool", []).content == "Hello "
    assert p.feed("_call>{", []).content == ""
    assert msgspec.to_builtins(p.snapshot()) == ["<tool_call>{", "held", True]


def test_refuses_a_json_family_state_of_stream_state_version_1():
    """``[held text, holding]``, the state the JSON-family parser wrote before the held shells
    merged (stream-state version 1, no longer read since version 3)."""
    p = registry.get_tool_parser("hermes")(ParseContext(tools=TOOLS, tool_choice="auto"))
    for old in (["<tool_call>{", True], ["<tool", False]):
        with pytest.raises(ValueError):
            p.restore(old)


test_chunking_invariance = chunking_test(
    [("hermes", t) for t, _, _ in HERMES_CASES] + [("longcat", f"hi<longcat_tool_call>{W}</longcat_tool_call> x")], 20)
