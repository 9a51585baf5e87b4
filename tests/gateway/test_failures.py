"""What the gateway does when the client leaves or the engine fails, stalls or talks nonsense."""

from __future__ import annotations

import http.client
import json
import time

import pytest

from tests.conftest import replay
from tests.gateway.harness import Gateways, free_port, gateways, sse, stub_engine  # noqa: F401 (fixtures)
from tests.gateway.test_openai_sdk import MESSAGES, MODEL, TOOL_CALL_IDS

CHAT = {"model": MODEL, "messages": MESSAGES}
OUTPUT = [{"index": 0, "token_ids": TOOL_CALL_IDS * 20, "finish_reason": "stop"}]


@pytest.fixture
def engine(stub_engine):
    stub_engine.control(outputs=OUTPUT, chunking="one")
    yield stub_engine
    stub_engine.control()


@pytest.fixture(scope="module")
def impatient(stub_engine):
    """A gateway that waits 1 s for the first token and 0.5 s between tokens."""
    g = Gateways(stub_engine, "--engine-first-token-timeout 1 --engine-idle-timeout 0.5")
    yield g.port("qwen3")
    g.stop()


def _wait_for(pred, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_client_disconnect_mid_stream_aborts_the_engine_request(gateways, engine):
    port = gateways.port("qwen3")
    engine.control(outputs=OUTPUT, chunking="one", delay=0.02)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/v1/chat/completions", json.dumps(dict(CHAT, stream=True)),
                 {"content-type": "application/json", "x-request-id": "gone-1"})
    resp = conn.getresponse()
    assert resp.status == 200
    resp.fp.readline()
    resp.close()
    conn.close()
    assert _wait_for(lambda: "generate-tokens-gone-1" in engine.stats()["aborted"])
    assert "generate-tokens-gone-1" not in engine.stats()["finished"]


def test_client_disconnect_before_a_whole_answer_aborts_too(gateways, engine):
    port = gateways.port("qwen3")
    engine.control(outputs=OUTPUT, chunking="one", delay=0.02)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/v1/chat/completions", json.dumps(CHAT),
                 {"content-type": "application/json", "x-request-id": "gone-2"})
    assert _wait_for(lambda: "generate-tokens-gone-2" in engine.stats()["received"])
    conn.sock.close()
    assert _wait_for(lambda: "generate-tokens-gone-2" in engine.stats()["aborted"])


def test_engine_down_is_503_in_the_envelope(stub_engine):
    class Nowhere:
        url = f"http://127.0.0.1:{free_port()}"

    g = Gateways(Nowhere())
    try:
        for stream in (False, True):
            status, body = replay.http(g.port("qwen3"), "POST", "/v1/chat/completions", dict(CHAT, stream=stream))
            assert status == 503 and body["error"]["type"] == "ServiceUnavailableError" and body["error"]["code"] == 503
    finally:
        g.stop()


@pytest.mark.parametrize("engine_status,status,etype", [(400, 400, "BadRequestError"), (404, 404, "NotFoundError"),
                                                         (500, 502, "BadGatewayError"), (503, 502, "BadGatewayError")])
def test_engine_errors_keep_4xx_and_turn_5xx_into_502(gateways, engine, engine_status, status, etype):
    engine.control(status=engine_status, message="engine says no", type=etype if engine_status < 500 else "InternalServerError")
    for stream in (False, True):
        got, body = replay.http(gateways.port("qwen3"), "POST", "/v1/chat/completions", dict(CHAT, stream=stream))
        assert (got, body["error"]["type"], body["error"]["code"]) == (status, etype, status)
        assert "engine says no" in body["error"]["message"]


def test_malformed_engine_sse_is_an_error_event_then_done(gateways, engine):
    engine.control(outputs=OUTPUT, chunking="one", malformed_after=3)
    status, events = sse(gateways.port("qwen3"), "/v1/chat/completions", dict(CHAT, stream=True))
    assert status == 200 and events[-1] == "[DONE]"
    assert events[-2]["error"]["type"] == "BadGatewayError"
    assert all("choices" in e for e in events[:-2])


def test_engine_dropping_the_connection_is_an_error_event(gateways, engine):
    engine.control(outputs=OUTPUT, chunking="one", drop_after=5)
    status, events = sse(gateways.port("qwen3"), "/v1/chat/completions", dict(CHAT, stream=True))
    assert status == 200 and events[-1] == "[DONE]" and "error" in events[-2]


def test_a_stall_between_tokens_times_out_and_aborts(impatient, engine):
    engine.control(outputs=OUTPUT, chunking="one", stall_after=4)
    t0 = time.time()
    status, events = sse(impatient, "/v1/chat/completions", dict(CHAT, stream=True), {"x-request-id": "stall-1"})
    assert time.time() - t0 < 5
    assert events[-1] == "[DONE]" and events[-2]["error"]["type"] == "GatewayTimeoutError"
    assert _wait_for(lambda: "generate-tokens-stall-1" in engine.stats()["aborted"])


def test_no_first_token_is_504_for_a_whole_answer(impatient, engine):
    engine.control(outputs=OUTPUT, chunking="one", stall_after=0)
    status, body = replay.http(impatient, "POST", "/v1/chat/completions", CHAT)
    assert status == 504 and body["error"]["code"] == 504


def test_stop_strings_are_never_sent_to_the_engine(gateways, engine):
    status, body = replay.http(gateways.port("qwen3"), "POST", "/v1/chat/completions", dict(CHAT, stop=["Paris"]))
    assert status == 200 and body["choices"][0]["stop_reason"] == "Paris"
    assert "stop" not in engine.stats()["last_request"]["sampling_params"]


def test_the_stub_engine_refuses_stop_strings_as_tokens_only_vllm(engine):
    body = {"token_ids": [1, 2], "sampling_params": {"stop": ["x"], "max_tokens": 4}}
    status, got = replay.http(engine.port, "POST", "/inference/v1/generate", body)
    assert status == 400 and "Check stop strings on the coordinator" in got["error"]["message"]


def test_request_ids_and_trace_context_reach_the_engine(gateways, engine):
    status, events = sse(gateways.port("qwen3"), "/v1/chat/completions", dict(CHAT, stream=True),
                         {"x-request-id": "trace-1", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
    assert status == 200 and events[0]["id"] == "chatcmpl-trace-1"
    # the engine named the request after the propagated X-Request-Id
    stats = engine.stats()
    assert "generate-tokens-trace-1" in stats["finished"]
    assert stats["last_headers"]["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert "authorization" not in stats["last_headers"]


def test_the_engine_api_key_is_sent_to_the_engine(stub_engine):
    g = Gateways(stub_engine, "--engine-api-key sekret")
    try:
        stub_engine.control(outputs=OUTPUT[:1], chunking="all")
        status, _ = replay.http(g.port("qwen3"), "POST", "/v1/chat/completions", CHAT)
        assert status == 200 and stub_engine.stats()["last_headers"]["authorization"] == "Bearer sekret"
    finally:
        stub_engine.control()
        g.stop()


def test_unknown_routes_stay_404_without_an_engine(servers):
    status, _ = replay.http(servers.port("qwen3"), "POST", "/v1/chat/completions", CHAT)
    assert status == 404


def test_a_client_that_does_not_read_holds_the_engine_back(gateways, engine):
    """No unbounded buffering: past the socket buffers, the engine's writes wait for the client."""
    ids = [9707, 11, 1879] * 40000  # plain text tokens, far more than the buffers between us hold
    engine.control(outputs=[{"index": 0, "token_ids": ids, "finish_reason": "length"}], chunking="one")
    conn = http.client.HTTPConnection("127.0.0.1", gateways.port("qwen3-plain"), timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "qwen3-plain", "messages": MESSAGES, "stream": True}),
                 {"content-type": "application/json", "x-request-id": "slow-1"})
    resp = conn.getresponse()
    assert resp.status == 200
    time.sleep(3)
    stats = engine.stats()
    assert "generate-tokens-slow-1" in stats["active"] and "generate-tokens-slow-1" not in stats["finished"]
    resp.close()
    conn.close()
    assert _wait_for(lambda: "generate-tokens-slow-1" in engine.stats()["aborted"])
