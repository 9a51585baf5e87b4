"""K2 Horizon (``families/k2_horizon.py``) tool calls: one-shot answers equal vLLM 0.33's
(recorded by running vLLM's own class on these texts), and any chunking with snapshot/restore
between chunks accumulates to the same answer (``held_block``).

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser);
- K2 Horizon keeps its own argument value conversion, because vLLM's parser converts
  differently (``engine/schema.py``).
"""

from __future__ import annotations

from feeding import ctx, parse
import pytest

from held_block import Cases, feed_all, vllm_tests
from tokenbridge.parsers import registry


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


@pytest.mark.parametrize(
    "parser, required_and_named, engine",
    [
        ("k2_horizon", False, True),
    ],
)
def test_class_flags_follow_vllm(parser, required_and_named, engine):
    cls = registry.get_tool_parser(parser)
    assert cls.supports_required_and_named is required_and_named
    assert cls.engine_based is engine


@pytest.mark.parametrize(
    "parser, before, call",
    [
        ("k2_horizon", "Sure. ", G0 + K + G1),
    ],
)
def test_content_before_the_call_streams_before_the_end(parser, before, call):
    deltas = feed_all(parser, [before, call[:5], call[5:]])
    assert deltas[0].content == before
    assert not deltas[1].content
    assert sum(len(d.tool_calls) for d in deltas) == 1


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
