"""K2 Horizon (``families/k2_horizon.py``) tool calls: one-shot answers equal vLLM 0.33's
(recorded by running vLLM's own class on these texts), and any chunking with snapshot/restore
between chunks accumulates to the same answer (``held_block``).

Incremental streams (``K2HorizonStreamedCalls``): random splits, one character at a time and whole,
with the state restored between pieces, add up to the one-shot answer for well-formed ``xml`` and
``xml_typed`` output; truncated output gets one answer for every split.

Known gaps:
- incremental: the ``json`` format streams whole; malformed or truncated output keeps the calls
  already sent (the one-shot answer makes the whole text content), and the text from the byte
  that breaks the format on is content;
- K2 Horizon keeps its own argument value conversion, because vLLM's parser converts
  differently (``engine/schema.py``).
"""

from __future__ import annotations

import json

from feeding import ctx, feed, parse, split
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from held_block import answer, Cases, ChoiceParser, class_flags_test, content_first_test, feed_all, OutputParser, vllm_tests
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext


CASES = Cases()
add = CASES.add

# ---- k2_horizon
G0, G1 = "<ifm|tool_calls>", "</ifm|tool_calls>"
def kx(name, pairs, typed=False):
    out = f"<ifm|tool_call>{name}"
    for k, v, *t in pairs:
        out += f"<ifm|arg_key>{k}</ifm|arg_key>"
        if t:
            out += f"<ifm|arg_type>{t[0]}</ifm|arg_type>"
        out += f"<ifm|arg_value>{v}</ifm|arg_value>"
    return out + "</ifm|tool_call>"
K = kx("get_weather", [("city", " Paris "), ("days", " 3 ")])
add("k2_single", "k2_horizon", G0 + K + G1)
add("k2_parallel", "k2_horizon", G0 + "\n" + K + "\n" + kx("search", [("q", "x"), ("limit", "5")]) + "\n" + G1)
add("k2_content_around", "k2_horizon", "Sure.\n" + G0 + K + G1 + "\nDone.")
add("k2_values", "k2_horizon", G0 + kx("get_weather", [("city", "A"), ("metric", "1"), ("scale", "2.0"), ("tags", "[1]"), ("note", "null"), ("mode", " 7 ")]) + G1)
add("k2_nan", "k2_horizon", G0 + kx("get_weather", [("city", "A"), ("tags", "[NaN]")]) + G1)
add("k2_missing_end", "k2_horizon", "pre " + G0 + K)
add("k2_cut_mid_call", "k2_horizon", "pre " + G0 + K[:30])
add("k2_non_ascii", "k2_horizon", "はい " + G0 + kx("get_weather", [("city", "Kraków")]) + G1 + " ✓")
add("k2_unknown_name", "k2_horizon", "x " + G0 + kx("nope", [("a", "1")]) + G1)
add("k2_stray_text", "k2_horizon", G0 + K + "junk" + G1)
add("k2_duplicate_arg", "k2_horizon", G0 + kx("search", [("q", "a"), ("q", "b")]) + G1)
add("k2_type_in_xml", "k2_horizon", G0 + kx("search", [("q", "a", "string")]) + G1)
add("k2_typed", "k2_horizon", G0 + kx("get_weather", [("city", "A", "string"), ("mode", "7", "string"), ("extra", " 5 ", "integer"), ("free", " [1] ", "any")]) + G1, kwargs={"tool_call_format": "xml_typed"})
add("k2_typed_missing_type", "k2_horizon", G0 + kx("search", [("q", "a")]) + G1, kwargs={"tool_call_format": "xml_typed"})
add("k2_json", "k2_horizon", G0 + '<ifm|tool_call>{"name": "get_weather", "arguments": {"city": 5, "days": "4", "tags": "[1]", "x": {"a": 1}}}</ifm|tool_call>' + G1, kwargs={"tool_call_format": "json"})
add("k2_json_bad", "k2_horizon", G0 + '<ifm|tool_call>{"name": "search", "arguments": [1]}</ifm|tool_call>' + G1, kwargs={"tool_call_format": "json"})
add("k2_blank", "k2_horizon", "  \n ")
add("k2_blank_legacy_reasoning", "k2_horizon", "  \n ", legacy_reasoning=True)
add("k2_second_group_is_content", "k2_horizon", G0 + K + G1 + " then " + G0 + K + G1)
add("k2_no_args", "k2_horizon", G0 + "<ifm|tool_call> ping </ifm|tool_call>" + G1)
add("k2_tool_choice_none", "k2_horizon", "a " + G0 + K + G1, tool_choice="none")


EXPECTED = {
    'k2_single': (None, [('get_weather', '{"city": " Paris ", "days": 3}')]),
    'k2_parallel': (None, [('get_weather', '{"city": " Paris ", "days": 3}'), ('search', '{"q": "x", "limit": 5}')]),
    'k2_content_around': ('Sure.\n\nDone.', [('get_weather', '{"city": " Paris ", "days": 3}')]),
    'k2_values': (None, [('get_weather', '{"city": "A", "metric": true, "scale": 2, "tags": [1], "note": null, "mode": 7}')]),
    'k2_nan': (None, [('get_weather', '{"city": "A", "tags": "[NaN]"}')]),
    'k2_missing_end': ('pre <ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value> Paris </ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_value> 3 </ifm|arg_value></ifm|tool_call>', []),
    'k2_cut_mid_call': ('pre <ifm|tool_calls><ifm|tool_call>get_weather<ifm', []),
    'k2_non_ascii': ('はい  ✓', [('get_weather', '{"city": "Kraków"}')]),
    'k2_unknown_name': ('x <ifm|tool_calls><ifm|tool_call>nope<ifm|arg_key>a</ifm|arg_key><ifm|arg_value>1</ifm|arg_value></ifm|tool_call></ifm|tool_calls>', []),
    'k2_stray_text': ('<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value> Paris </ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_value> 3 </ifm|arg_value></ifm|tool_call>junk</ifm|tool_calls>', []),
    'k2_duplicate_arg': ('<ifm|tool_calls><ifm|tool_call>search<ifm|arg_key>q</ifm|arg_key><ifm|arg_value>a</ifm|arg_value><ifm|arg_key>q</ifm|arg_key><ifm|arg_value>b</ifm|arg_value></ifm|tool_call></ifm|tool_calls>', []),
    'k2_type_in_xml': ('<ifm|tool_calls><ifm|tool_call>search<ifm|arg_key>q</ifm|arg_key><ifm|arg_type>string</ifm|arg_type><ifm|arg_value>a</ifm|arg_value></ifm|tool_call></ifm|tool_calls>', []),
    'k2_typed': (None, [('get_weather', '{"city": "A", "mode": "7", "extra": 5, "free": " [1] "}')]),
    'k2_typed_missing_type': ('<ifm|tool_calls><ifm|tool_call>search<ifm|arg_key>q</ifm|arg_key><ifm|arg_value>a</ifm|arg_value></ifm|tool_call></ifm|tool_calls>', []),
    'k2_json': (None, [('get_weather', '{"city": "5", "days": 4, "tags": [1], "x": {"a": 1}}')]),
    'k2_json_bad': ('<ifm|tool_calls><ifm|tool_call>{"name": "search", "arguments": [1]}</ifm|tool_call></ifm|tool_calls>', []),
    'k2_blank': (None, []),
    'k2_blank_legacy_reasoning': ('  \n ', []),
    'k2_second_group_is_content': (' then <ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value> Paris </ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_value> 3 </ifm|arg_value></ifm|tool_call></ifm|tool_calls>', [('get_weather', '{"city": " Paris ", "days": 3}')]),
    'k2_no_args': (None, [('ping', '{}')]),
    'k2_tool_choice_none': ('a <ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value> Paris </ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_value> 3 </ifm|arg_value></ifm|tool_call></ifm|tool_calls>', []),
}

(test_one_shot_matches_vllm, test_every_case_has_an_expectation,
 test_chunking_with_snapshot_restore_accumulates_to_one_shot, test_char_by_char_with_restore) = vllm_tests(CASES, EXPECTED, 70)


test_class_flags_follow_vllm = class_flags_test([
    ("k2_horizon", False, True),
])


test_content_before_the_call_streams_before_the_end = content_first_test([
    ("k2_horizon", "Sure. ", G0 + K + G1),
])


def test_k2_horizon_decides_when_the_group_closes():
    first, second, last = feed_all("k2_horizon", ["a ", G0 + K + G1, " tail"])[:3]
    assert first.content == "a "
    assert [c.name for c in second.tool_calls] == ["get_weather"]
    assert last.content == " tail"


def test_k2_horizon_unsupported_format_is_content():
    text = G0 + K + G1
    deltas = feed_all("k2_horizon", [text], chat_template_kwargs={"tool_call_format": "yaml"})
    assert "".join(d.content for d in deltas) == text
    assert not any(d.tool_calls for d in deltas)


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_k2_horizon_reasoning():
    c = ctx()
    assert parse("k2_horizon", "<ifm|think>a</ifm|think>b", c) == ("a", "b")
    assert parse("k2_horizon", "a<ifm|tool_calls>x", c) == ("a", "<ifm|tool_calls>x")
    assert parse("k2_horizon", "plain", c) == ("", "plain")


# ---- incremental streams (``K2HorizonStreamedCalls``, xml and xml_typed formats)

STREAM_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "note": {"type": ["string", "null"]},
    "tags": {"type": "array"}, "free": {}}}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
        "q": {"type": "string"}}}}}]
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), max_size=10)
_VALUE = st.one_of(_TEXT, st.sampled_from([" 3 ", "[1, 2]", "null", "x\n", "<ifm", "a </ifm|arg_val", "1.5"]))
_WS = st.sampled_from(["", "\n", " "])


@st.composite
def k2_output(draw) -> tuple[str, str]:
    fmt = draw(st.sampled_from(["xml", "xml_typed"]))
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["get_weather", "search"]))
        keys = draw(st.lists(st.sampled_from(["city", "days", "note", "tags", "free", "q", "x"]), max_size=4, unique=True))
        pairs = [(draw(st.sampled_from([k, f" {k} "])), draw(_VALUE),
                  *([draw(st.sampled_from(["string", "integer", "any", " null ", "string[]"]))] if fmt == "xml_typed" else []))
                 for k in keys]
        call = kx(draw(st.sampled_from([name, f" {name}\n"])), pairs, typed=fmt == "xml_typed")
        calls.append(call.replace("</ifm|arg_key>", "</ifm|arg_key>" + draw(_WS)) + draw(_WS))
    head = draw(st.sampled_from(["", "Sure.\n", "  ", "a <ifm|x"]))
    tail = draw(st.sampled_from(["", "\nDone.", " then " + G0 + G1]))
    return fmt, head + G0 + draw(_WS) + "".join(calls) + G1 + tail


def streamed(fmt: str, pieces: list[str], incremental: bool = True):
    case = {"parser": "k2_horizon", "tools": STREAM_TOOLS, "kwargs": {"tool_call_format": fmt}}
    if not incremental:
        return answer(case, pieces, restore=True)
    cls = registry.get_tool_parser("k2_horizon").incremental
    c = ParseContext(tools=STREAM_TOOLS, tool_choice="auto", chat_template_kwargs={"tool_call_format": fmt})
    fed = feed(lambda: ChoiceParser(OutputParser(c, None, cls(c)), False, True, engine=True), pieces, restore=True)
    return fed.message()[1], [tuple(x) for x in fed.named_calls()]


@settings(max_examples=300, deadline=None)
@given(k2_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_incremental_streams_add_up_to_the_one_shot_answer(case, cuts):
    fmt, text = case
    want = streamed(fmt, [text], incremental=False)
    assert want[1]
    assert streamed(fmt, split(text, cuts)) == want == streamed(fmt, list(text))


@settings(max_examples=200, deadline=None)
@given(k2_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_stream_gets_the_same_answer_for_every_split(case, cut, cuts):
    fmt, text = case
    text = text[: cut % (len(text) + 1)]
    got = streamed(fmt, split(text, cuts))
    assert got == streamed(fmt, [text]) == streamed(fmt, list(text))
    if not got[1]:
        assert got == streamed(fmt, [text], incremental=False)
    for _, args in got[1]:
        json.loads(args)


def test_a_string_value_streams_as_it_arrives_and_others_at_their_end():
    c = ParseContext(tools=STREAM_TOOLS, tool_choice="auto")
    p = registry.get_tool_parser("k2_horizon").incremental(c)
    steps = ["Hi " + G0 + "<ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value> Pa", "ris",
             "</ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_value>3", "</ifm|arg_value></ifm|tool_call>",
             G1 + " bye"]
    sent = [([(tc.name, tc.arguments) for tc in d.tool_calls], d.content) for d in (p.feed(s, []) for s in steps)]
    assert sent == [([("get_weather", ""), (None, '{"city": "'), (None, " Pa")], "Hi "), ([(None, "ris")], ""),
                    ([(None, '"')], ""), ([(None, ', "days": 3'), (None, "}")], ""), ([], " bye")]


@pytest.mark.parametrize("text,content,calls", [
    (G0 + K + "junk" + G1, "junk" + G1, [("get_weather", '{"city": " Paris ", "days": 3}')]),
    (G0 + kx("search", [("q", "a"), ("q", "b")]) + G1,
     "<ifm|arg_key>q</ifm|arg_key><ifm|arg_value>b</ifm|arg_value></ifm|tool_call>" + G1, [("search", '{"q": "a"}')]),
    ("x " + G0 + kx("nope", [("a", "1")]) + G1, "x " + G0 + kx("nope", [("a", "1")]) + G1, []),
    ("pre " + G0 + K, "pre ", [("get_weather", '{"city": " Paris ", "days": 3}')]),
    ("pre " + G0 + K[:K.index(" Paris") + 4], "pre ", [("get_weather", '{"city": " Par"}')]),
    ("pre " + G0 + K[:K.index(" Paris") - 3], "pre ", [("get_weather", "{}")]),
])
def test_malformed_output_gets_the_documented_answer_for_every_split(text, content, calls):
    assert streamed("xml", [text]) == (content, calls) == streamed("xml", list(text))
