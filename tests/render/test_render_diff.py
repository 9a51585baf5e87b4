"""Render differences found by differential testing against vLLM 0.33, replayed through real servers.

``data/render_vllm_diff.json`` holds requests that once rendered differently from vLLM (developer
messages on templates without that role, tool dicts as vLLM dumps them, strict assistant
tool_calls and content-part checks, empty text parts, ``documents`` in the template kwargs,
SamplingParams checks, completion ``suffix``, Mistral forced tool schemas, SentencePiece
out-of-range detokenize; then ``chat_template_kwargs`` merged as vLLM merges them, field bounds,
the schema's after-validators before the model lookup, xgrammar-refused constraints left alone,
and the derender bodies' own checks) with the answer vLLM recorded for them (a 400 where vLLM
crashed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import replay, without_vllm_crash

DATA = Path(__file__).parent / "data" / "render_vllm_diff.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_render_matches_recorded_vllm(servers, case):
    port = servers.port(case["profile"])
    status, body = replay.http(port, "POST", case["path"], case["body"])
    expected = without_vllm_crash(case["response"])
    assert replay.compare_response(expected, status, body) is None, case["note"]
