"""One-shot derender answers equal vLLM 0.33's recorded ones, through a real server."""

from __future__ import annotations

import pytest

from conftest import PROFILES, corpus_cases, replay

KINDS = {"chat_derender", "completion_derender"}


@pytest.mark.parametrize("profile", sorted(PROFILES))
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
