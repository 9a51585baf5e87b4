"""Structural tags for tool calls and Harmony output, checked byte for byte against the corpus."""

from __future__ import annotations

import json

import pytest

from tests.conftest import PROFILES, corpus_cases
from tokenbridge.render import parser_adjust, sampling
from tokenbridge.render import structural_tags as st

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"]}},
            "required": ["city"],
        },
    },
}
SEARCH = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}, "strict": True}}


def _structural_tag_cases():
    for profile, spec in PROFILES.items():
        for case in corpus_cases(profile, {"chat_render"}):
            body = case["response"]["body"]
            so = body.get("sampling_params", {}).get("structured_outputs") if isinstance(body, dict) else None
            if so and so.get("structural_tag"):
                yield pytest.param(spec, case, id=case["id"])


def _adjust(tool_parser, reasoning_parser, request: dict, harmony: bool = False) -> dict | None:
    tools = request.get("tools")
    tool_choice = request.get("tool_choice") or ("auto" if tools else "none")
    spec = sampling.structured_outputs(request.get("response_format"), request.get("structured_outputs"))
    adjusted = parser_adjust.adjust_request(
        tool_parser, reasoning_parser, tools, tool_choice, request.get("parallel_tool_calls"), spec, harmony
    )
    if adjusted.structured_outputs is None:
        return spec
    return sampling.structured_outputs_params(adjusted.structured_outputs)


def _tag(tool_parser, request: dict, harmony: bool = False) -> dict | None:
    so = _adjust(tool_parser, None, request, harmony)
    return json.loads(so["structural_tag"]) if so and so.get("structural_tag") else None


@pytest.mark.parametrize("profile,case", list(_structural_tag_cases()))
def test_corpus_structural_tag_is_byte_identical(profile, case):
    request = case["request"]["body"]
    harmony = profile["family"] == "harmony"
    got = _adjust(profile.get("tool_parser"), profile.get("reasoning_parser"), request, harmony)
    assert got == case["response"]["body"]["sampling_params"]["structured_outputs"]


def test_node_orders_fields_and_fills_defaults():
    assert list(st.node("json_schema", json_schema=True)) == [
        "type", "json_schema", "style", "any_order", "max_whitespace_cnt", "excludes"
    ]
    assert st.node("any_text") == {"type": "any_text", "excludes": [], "max_tokens": None, "max_chars": None}


def test_request_format_is_normalized_with_defaults():
    fmt = st.normalize_format({"type": "tag", "begin": "<x>", "content": {"type": "any_text"}, "end": "</x>"})
    assert fmt["content"] == st.node("any_text")


def test_auto_without_strict_tools_is_unconstrained_for_auto_level_parsers():
    assert _tag("hermes", {"tools": [WEATHER], "tool_choice": "auto"}) is None


def test_a_strict_tool_constrains_auto_and_pins_only_its_schema():
    tag = _tag("llama3_json", {"tools": [WEATHER, SEARCH], "tool_choice": "auto"})
    schemas = [t["content"]["json_schema"] for t in tag["format"]["tags"]]
    assert tag["format"]["type"] == "triggered_tags" and schemas == [True, {"type": "object"}]


def test_single_call_constrains_auto_and_stops_lists_but_not_schemas():
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "tags_with_separator"}}}
    tool["function"]["strict"] = True
    tag = _tag("hermes", {"tools": [tool], "tool_choice": "auto", "parallel_tool_calls": False})
    assert tag["format"]["stop_after_first"] is True
    assert tag["format"]["tags"][0]["content"]["json_schema"] == {"type": "tags_with_separator"}


def test_glm_uses_xgrammar_layout_when_every_tool_is_strict():
    tag = _tag("glm45", {"tools": [SEARCH], "tool_choice": "required"})
    assert tag["format"]["type"] == "triggered_tags" and tag["format"]["at_least_one"] is True
    assert tag["format"]["tags"][0]["content"]["style"] == "glm_xml"


def test_glm_shallow_values_follow_property_types():
    tag = _tag("glm45", {"tools": [WEATHER], "tool_choice": "required"})
    pairs = tag["format"]["tags"][0]["content"]["content"]["elements"]
    unit = pairs[1]["elements"][1]
    assert [e["type"] for e in unit["elements"]] == ["json_schema", "any_text"]
    assert unit["elements"][0]["json_schema"] == {"type": "null"}


def test_glm_auto_with_output_constraint_is_either_calls_or_output():
    request = {"tools": [WEATHER], "tool_choice": "auto", "response_format": {"type": "json_object"}}
    tag = _tag("glm45", request)
    calls, output = tag["format"]["elements"]
    assert calls["type"] == "tags_with_separator" and output["json_schema"] == {"type": "object"}


def test_forced_choice_keeps_only_the_named_tool():
    choice = {"type": "function", "function": {"name": "search"}}
    tag = _tag("deepseek_v31", {"tools": [WEATHER, SEARCH], "tool_choice": choice})
    assert tag["format"]["type"] == "tag" and "search" in tag["format"]["begin"]


def test_harmony_output_constraint_keeps_other_settings():
    request = {"structured_outputs": {"regex": "[a-z]+", "disable_any_whitespace": True}}
    so = _adjust(None, "openai_gptoss", request, harmony=True)
    final = json.loads(so["structural_tag"])["format"]["elements"][-1]
    assert so["regex"] is None and so["disable_any_whitespace"] is True
    assert final["begin"] == "<|channel|>final<|message|>" and final["content"]["pattern"] == "[a-z]+"


def test_non_tag_parsers_still_use_json_schema():
    so = _adjust("pythonic", None, {"tools": [WEATHER], "tool_choice": "required"})
    assert so["structural_tag"] is None and so["json"]["type"] == "array"
