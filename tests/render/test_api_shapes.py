"""Messages and Responses render shapes the parity corpus lacks, recorded from vLLM 0.33.

Image blocks (refused: no multimodal model), ``cache_control``, ``metadata``,
``disable_parallel_tool_use``, ``previous_response_id``, ``include``, ``store``, ``truncation``,
``parallel_tool_calls``, the item union's refusals, and one pin per profile for each rule:
Responses without tools has tool_choice "none" (granite adds no ``skip_special_tokens``),
Responses prompts get the tokenizer's special tokens (llama3's second BOS), the Mistral parser
keeps special tokens whenever vLLM adjusts the request and forces no schema on Responses,
gpt-oss Responses items follow vLLM's own Harmony conversion (reasoning by content only, calls
without namespace, a call output after its call, function and built-in tools only).
Compared as the replay tool compares (random ids by shape, errors by status, type and code).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import replay

CASES = json.loads((Path(__file__).parent / "data" / "api_shapes_vllm.json").read_text())["cases"]
ROUTES = {"messages": "/v1/messages/render", "responses": "/v1/responses/render"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c['profile']}-{c['route']}-{c['note']}" for c in CASES])
def test_render_matches_vllm(servers, case):
    status, body = replay.http(servers.port(case["profile"]), "POST", ROUTES[case["route"]], case["body"])
    assert replay.compare_response({"status": case["status"], "body": case["response"]}, status, body) is None


def test_harmony_reasoning_content_that_is_not_texts_is_a_400_not_a_crash(servers):
    """vLLM joins the texts of a reasoning item's content and crashes (a 500) when the content
    is an iterable of something else, which its item union lets through."""
    body = {
        "model": "openai/gpt-oss-20b",
        "input": [{"role": "user", "content": "Hi"}, {"type": "reasoning", "id": "rs_1", "summary": "abc", "content": "abc"}],
    }
    status, out = replay.http(servers.port("gpt-oss"), "POST", ROUTES["responses"], body)
    assert status == 400 and out["error"]["type"] == "invalid_request_error" and out["error"]["param"] == "input"
