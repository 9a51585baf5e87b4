"""One-shot derender answers equal vLLM 0.33's recorded ones, through a real server."""

from __future__ import annotations

import pytest

from conftest import corpus_cases, replay

PROFILES = ["qwen3", "qwen3-plain", "mistral-v0.1-spm", "llama3-json", "deepseek-r1"]
KINDS = {"chat_derender", "completion_derender"}


@pytest.mark.parametrize("profile", PROFILES)
def test_derender_matches_recorded_vllm_answers(servers, profile):
    port = servers.port(profile)
    failures = []
    for case in corpus_cases(profile, KINDS):
        r = case["request"]
        status, body = replay.http(port, r["method"], r["path"], r.get("body"), r.get("raw"))
        err = replay.compare_response(case["response"], status, body)
        if err:
            failures.append(f"{case['id']}: {err}")
    assert not failures, "\n".join(failures[:10])
