"""A kept chat plan changes speed, never answers: each corpus chat render, made right after a
render of the same fields with other messages (which keeps the plan), gets vLLM's recorded
answer; the plan's key tells apart what the answer depends on."""

from __future__ import annotations

import msgspec
import pytest

from tests.conftest import PROFILES, corpus_cases, replay
from tokenbridge.config import ServeConfig
from tokenbridge.protocol.openai import ChatCompletionRequest
from tokenbridge.render.chat import ChatPlans

SEED_MESSAGES = [{"role": "user", "content": "Hello"}]


def _chat_renders():
    for profile in PROFILES:
        for case in corpus_cases(profile, {"chat_render"}):
            body = case["request"].get("body")
            if isinstance(body, dict) and isinstance(body.get("messages"), list):
                yield pytest.param(profile, case, id=case["id"])


@pytest.mark.parametrize("profile,case", list(_chat_renders()))
def test_a_render_after_one_with_the_same_fields_matches_vllm(servers, profile, case):
    port = servers.port(profile)
    req = case["request"]
    seed = {**req["body"], "messages": SEED_MESSAGES}
    replay.http(port, "POST", req["path"], seed)
    for _ in range(2):
        status, body = replay.http(port, req["method"], req["path"], req.get("body"), req.get("raw"))
        assert replay.compare_response(case["response"], status, body) is None


def _request(**fields) -> ChatCompletionRequest:
    return msgspec.convert({"model": "m", "messages": SEED_MESSAGES, **fields}, ChatCompletionRequest)


def test_the_key_leaves_out_only_the_messages_and_the_request_id():
    plans, model, cfg = ChatPlans(), object(), ServeConfig()

    def key(**fields) -> bytes | None:
        return plans.key(model, cfg, _request(**fields), "chat")

    assert key(messages=[{"role": "user", "content": "other"}]) == key() == key(request_id="r-1")
    assert key(temperature=0.5) != key(temperature=0.7)
    assert key(vllm_xargs={"a": 1}) != key(vllm_xargs={"a": 1.0}) != key(vllm_xargs={"a": True})
    assert key(response_format={"type": "text", "x": 1}) != key(response_format={"x": 1, "type": "text"})
    assert key() != plans.key(model, cfg, _request(), "messages")
    assert key() != plans.key(model, ServeConfig(), _request(), "chat")


def test_a_plan_is_found_only_for_the_model_and_config_it_was_made_for():
    plans, model, cfg = ChatPlans(), object(), ServeConfig()
    key = plans.key(model, cfg, _request(), "chat")
    plans.put(key, model, cfg, "choices", "assembly")
    assert plans.get(key, model, cfg) == ("choices", "assembly")
    assert plans.get(key, object(), cfg) is None
    assert plans.get(key, model, ServeConfig()) is None
