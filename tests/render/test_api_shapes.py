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
