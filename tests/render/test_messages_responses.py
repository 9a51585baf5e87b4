"""/v1/messages/render and /v1/responses/render, replayed against vLLM 0.33 captures (qwen3 profile).

Each fixture case was sent to the oracle with ``X-Request-Id: case<i>``; random ``resp_`` ids
are compared by shape, errors by status/type/param.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

CASES = json.loads((Path(__file__).parent / "data" / "messages_responses_vllm.json").read_text())
ROUTES = {"messages": "/v1/messages/render", "responses": "/v1/responses/render"}
_RANDOM_RESP = re.compile(r"^resp_[0-9a-f]{16}$")


def _post(port: int, path: str, body: dict, request_id: str) -> tuple[int, dict]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "X-Request-Id": request_id},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _normalize(status: int, body: dict) -> dict:
    if status != 200:
        return {k: body["error"][k] for k in ("type", "param", "code")}
    if _RANDOM_RESP.match(str(body.get("request_id"))):
        body = {**body, "request_id": "resp_<random>"}
    return body


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c['route']}-{i}" for i, c in enumerate(CASES)])
def test_matches_vllm(servers, i):
    case = CASES[i]
    status, body = _post(servers.port("qwen3"), ROUTES[case["route"]], case["body"], f"case{i}")
    assert status == case["status"]
    assert _normalize(status, body) == _normalize(case["status"], case["response"])


@pytest.mark.parametrize(("profile", "status"), [("qwen3", 400), ("gpt-oss", 200)])
def test_responses_mm_kwargs_are_refused_where_vllm_preprocesses_the_chat(servers, profile, status):
    """vLLM refuses per-request mm kwargs in its chat preprocessing, which its Harmony
    Responses path does not run (recorded: 400 on qwen3, 200 on gpt-oss)."""
    model = {"qwen3": "Qwen/Qwen3-8B", "gpt-oss": "openai/gpt-oss-20b"}[profile]
    got, body = _post(servers.port(profile), ROUTES["responses"],
                      {"model": model, "input": "q", "mm_processor_kwargs": {"a": 1}}, "mm")
    assert got == status, body
