"""Poolside v1 (``families/poolside.py``) tool calls: one-shot answers equal vLLM 0.33's
(recorded by running vLLM's own class on these texts), and any chunking with snapshot/restore
between chunks accumulates to the same answer (``held_block``).

Known gaps:
- none known for the incremental stream (``--tool-call-streaming incremental``, tested at the end).
"""

from __future__ import annotations

from functools import partial

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import split
from held_block import Cases, class_flags_test, content_first_test, feed_all, TOOLS, vllm_tests, vocab
from incremental import restored

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext


CASES = Cases()
add = CASES.add

# ---- poolside_v1
def ps(name, pairs):
    return f"<tool_call>{name}\n" + "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in pairs) + "</tool_call>"
P = ps("get_weather", [("city", " Paris "), ("days", " 3 ")])
add("poolside_single", "poolside_v1", P)
add("poolside_parallel", "poolside_v1", P + "\n" + ps("search", [("q", "a\nb"), ("limit", "[1, (2, 3)]")]))
add("poolside_content_around", "poolside_v1", "Let me see.\n" + P + "\nafter")
add("poolside_ws_content", "poolside_v1", "  \n" + P)
add("poolside_values", "poolside_v1", ps("get_weather", [("city", "1"), ("metric", "True"), ("opts", "{'a': None}"), ("tags", "[1,"), ("note", "null")]))
add("poolside_missing_end", "poolside_v1", "pre " + P[:-len("</tool_call>")])
add("poolside_cut_mid_call", "poolside_v1", "pre " + P + ps("search", [("q", "x")])[:25])
add("poolside_non_ascii", "poolside_v1", "日本語 " + ps("get_weather", [("city", "Ελλάδα")]))
add("poolside_unknown_name", "poolside_v1", ps("nope", [("a", "1")]))
add("poolside_no_name", "poolside_v1", "x<tool_call><arg_key>a</arg_key><arg_value>1</arg_value></tool_call>")
add("poolside_only_name", "poolside_v1", "<tool_call>ping</tool_call>")
add("poolside_set_literal", "poolside_v1", ps("search", [("limit", "{1, 2}")]))


EXPECTED = {
    'poolside_single': (None, [('get_weather', '{"city": " Paris ", "days": 3}')]),
    'poolside_parallel': (None, [('get_weather', '{"city": " Paris ", "days": 3}'), ('search', '{"q": "a\\nb", "limit": [1, [2, 3]]}')]),
    'poolside_content_around': ('Let me see.\n', [('get_weather', '{"city": " Paris ", "days": 3}')]),
    'poolside_ws_content': (None, [('get_weather', '{"city": " Paris ", "days": 3}')]),
    'poolside_values': (None, [('get_weather', '{"city": "1", "metric": true, "opts": {"a": null}, "tags": "[1,", "note": null}')]),
    'poolside_missing_end': ('pre <tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value> Paris </arg_value>\n<arg_key>days</arg_key>\n<arg_value> 3 </arg_value>\n', []),
    'poolside_cut_mid_call': ('pre ', [('get_weather', '{"city": " Paris ", "days": 3}')]),
    'poolside_non_ascii': ('日本語 ', [('get_weather', '{"city": "Ελλάδα"}')]),
    'poolside_unknown_name': (None, [('nope', '{"a": 1}')]),
    'poolside_no_name': ('x<tool_call><arg_key>a</arg_key><arg_value>1</arg_value></tool_call>', []),
    'poolside_only_name': (None, [('ping', '{}')]),
    'poolside_set_literal': ('<tool_call>search\n<arg_key>limit</arg_key>\n<arg_value>{1, 2}</arg_value>\n</tool_call>', []),
}

(test_one_shot_matches_vllm, test_every_case_has_an_expectation,
 test_chunking_with_snapshot_restore_accumulates_to_one_shot, test_char_by_char_with_restore) = vllm_tests(CASES, EXPECTED, 50)


test_class_flags_follow_vllm = class_flags_test([
    ("poolside_v1", False, False),
])


test_content_before_the_call_streams_before_the_end = content_first_test([
    ("poolside_v1", "One moment. ", P),
])


def test_snapshot_holds_only_undecided_text():
    cls = registry.get_tool_parser("poolside_v1")
    p = cls(ParseContext(tools=TOOLS, tool_choice="auto", vocab=vocab()))
    p.feed("x" * 1000 + "<tool", [])
    assert msgspec.to_builtins(p.snapshot()) == ["<tool", "open", True]


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# Poolside V1 incremental calls: GLM-style pairs read as written, string-typed values
# streaming, adding up to the one-shot answer for every split of a well-formed output.

STREAM_TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"},
    "opts": {"type": "object"}}}}}]

STREAM_CTX = ParseContext(tools=STREAM_TOOLS, tool_choice="auto")

_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<>"), max_size=12),
    st.sampled_from(["\n", " 0644 ", "12", "true", '{"a": [1, 2]}', "(1, 2)", "None", "a < b > c", "'x'"]),
)

stream = partial(restored, "poolside_v1", ctx=STREAM_CTX)


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
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    else:
        assert got == stream([text])
    assert stream(list(text)) == stream([text])


@settings(max_examples=200, deadline=None)
@given(poolside_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = stream(split(text, cuts))
    assert got == stream([text]) == stream(list(text))
    if not got.calls:
        assert got.content == (stream([text], incremental=False).content or "")


def test_a_string_value_streams_as_it_arrives():
    p = registry.get_tool_parser("poolside_v1").incremental(STREAM_CTX)
    steps = ["Ok <tool_call>write_file\n<arg_key>content</arg_key><arg_value>li", "ne 1\n",
             "</arg_value><arg_key>mode</arg_key><arg_value>7</arg_value></tool_call>"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{"), (None, '"content": "'), (None, "li")], [(None, "ne 1\\n")],
                    [(None, '"'), (None, ', "mode": 7'), (None, "}")]]
