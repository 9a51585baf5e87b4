"""Render, tokenize and request-error cases of the public corpus, replayed through real servers."""

from __future__ import annotations

import pytest

from tests.conftest import corpus_cases, replay

KINDS = {"chat_render", "completion_render", "tokenize", "detokenize", "error", "models", "health"}
# One profile per tool/reasoning configuration shape: parser + reasoning, plain, engine-based.
PROFILES = ("qwen3", "qwen3-plain", "llama3-json", "glm45")


def _cases():
    for profile in PROFILES:
        for case in corpus_cases(profile, KINDS):
            if case["kind"] == "error" and "derender" in case["request"]["path"]:
                continue  # derender validation is covered by the derender tests
            yield pytest.param(profile, case, id=case["id"])


@pytest.mark.parametrize("profile,case", list(_cases()))
def test_render_case_matches_vllm(servers, profile, case):
    port = servers.port(profile)
    req = case["request"]
    status, body = replay.http(port, req["method"], req["path"], req.get("body"), req.get("raw"))
    assert replay.compare_response(case["response"], status, body) is None
