"""Render rules that do not need a server: prompt shapes, parser adjustments, sampling wire form."""

from __future__ import annotations

import pytest

from tokenbridge.protocol.errors import ApiError
from tokenbridge.protocol.openai import completion_prompts
from tokenbridge.render import parser_adjust, sampling
from tokenbridge.render.conversation import check_tool_call_arguments, prepare_messages

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def test_completion_prompt_shapes_split_into_engine_prompts():
    assert completion_prompts("hi") == ["hi"]
    assert completion_prompts(["a", "b"]) == ["a", "b"]
    assert completion_prompts([1, 2]) == [[1, 2]]
    assert completion_prompts([[1], [2, 3]]) == [[1], [2, 3]]


def test_negative_token_id_is_a_request_validation_error_at_its_index():
    with pytest.raises(ApiError) as e:
        completion_prompts([5, -1])
    assert (e.value.status, e.value.type, e.value.param) == (400, "Bad Request", "body.prompt.1")


def test_hermes_keeps_special_tokens_only_when_tools_are_active():
    on = parser_adjust.adjust_request("hermes", None, TOOLS, "auto", True, False)
    off = parser_adjust.adjust_request("hermes", None, TOOLS, "none", True, False)
    assert on.skip_special_tokens is False and off.skip_special_tokens is None


def test_engine_reasoning_parser_keeps_special_tokens_without_tools():
    assert parser_adjust.adjust_request(None, "qwen3", None, "none", True, False).skip_special_tokens is False


def test_required_choice_becomes_a_tool_array_schema_without_structural_tags():
    adj = parser_adjust.adjust_request("pythonic", None, TOOLS, "required", False, False)
    schema = adj.structured_outputs["json"]
    assert schema["type"] == "array" and schema["maxItems"] == 1
    assert schema["items"]["anyOf"][0]["properties"]["name"]["enum"] == ["f"]


def test_greedy_sampling_drops_top_p_top_k_min_p_and_prompt_logprobs_skip_cache():
    wire = sampling.serialize({"temperature": 0.0, "top_p": 0.9, "top_k": 5, "min_p": 0.1, "prompt_logprobs": 1})
    assert "top_p" not in wire and "top_k" not in wire and "min_p" not in wire
    assert wire["skip_reading_prefix_cache"] is True


def test_null_content_and_bad_tool_arguments_render_as_empty():
    conv = prepare_messages(
        [{"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{bad"}}]}],
        "string",
    )
    assert conv[0]["content"] == "" and conv[0]["tool_calls"][0]["function"]["arguments"] == {}


def test_object_tool_arguments_are_rejected_like_the_request_schema():
    with pytest.raises(ApiError) as e:
        check_tool_call_arguments([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}])
    assert e.value.type == "Bad Request"
