"""``/metrics`` of a 2-worker server counts every request whichever worker answered, with buckets,
under vLLM's metric names and tokenbridge's own; totals kept in process expose as prometheus_client's."""

from __future__ import annotations

import os
import re
import signal
import threading
import urllib.request

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_workers import _children, _post, _start

from tokenbridge.model.lru import BoundedLRU
from tokenbridge.server.metrics import Metrics


def _scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_two_workers_report_one_sum_with_buckets():
    proc, port = _start("--workers", "2", "--served-model-name", "qwen3")
    try:
        assert len(_children(proc.pid)) == 2
        body = {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]}
        n = 24
        results = []

        def call() -> None:
            results.append(_post(port, "/v1/chat/completions/render", body))

        threads = [threading.Thread(target=call) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert [r[0] for r in results] == [200] * n
        assert _post(port, "/v1/chat/completions/render", {"model": "other", "messages": []})[0] == 404
        tokens = len(results[0][1]["token_ids"])
        route = '"/v1/chat/completions/render"'
        scrapes = [_scrape(port) for _ in range(6)]  # new connections: either worker may answer
        for m in scrapes:
            assert m[f'http_requests_total{{handler={route},method="POST",status="2xx"}}'] == n
            assert m[f'http_requests_total{{handler={route},method="POST",status="4xx"}}'] == 1
            assert m[f'tokenbridge_errors_total{{route={route},status="404"}}'] == 1
            assert m[f'tokenbridge_request_duration_seconds_count{{route={route}}}'] == n + 1
            assert m[f'tokenbridge_request_duration_seconds_bucket{{le="+Inf",route={route}}}'] == n + 1
            assert m[f'http_request_duration_seconds_bucket{{handler={route},le="+Inf",method="POST"}}'] == n + 1
            every_route = sum(v for k, v in m.items() if k.startswith("http_requests_total{"))
            assert m["http_request_duration_highr_seconds_count"] == every_route >= n + 1
            assert m[f"tokenbridge_tokens_rendered_total{{route={route}}}"] == n * tokens
            hits = m.get('tokenbridge_cache_lookups_total{cache="prompt_memo",result="hit"}', 0)
            misses = m.get('tokenbridge_cache_lookups_total{cache="prompt_memo",result="miss"}', 0)
            kept = m.get('tokenbridge_cache_lookups_total{cache="answer_memo",result="hit"}', 0)
            # one prompt memo lookup per render, on either worker, unless its whole answer was kept
            assert hits + misses + kept == n and hits + kept > 0
            buckets = [v for k, v in m.items()
                       if k.startswith("tokenbridge_request_duration_seconds_bucket") and route in k]
            assert buckets == sorted(buckets) and len(buckets) == 14
            assert m["process_resident_memory_bytes"] > 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def test_derender_tokens_are_counted():
    proc, port = _start("--workers", "1", "--served-model-name", "qwen3")
    try:
        ids = [9707, 13, 151645]
        status, _ = _post(port, "/v1/chat/completions/derender", {
            "model": "qwen3",
            "generate_response": {"request_id": "x", "choices": [{"index": 0, "token_ids": ids, "finish_reason": "stop"}]},
        })
        assert status == 200
        m = _scrape(port)
        assert m['tokenbridge_tokens_derendered_total{route="/v1/chat/completions/derender"}'] == len(ids)
        assert "python_info" in " ".join(m) or any(k.startswith("python_gc") for k in m)
        assert not any(re.match(r'http_requests_total\{handler="/metrics"', k) for k in m)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def _exposition(m: Metrics) -> dict[str, float]:
    from prometheus_client import generate_latest

    out = {}
    for line in generate_latest(m.prom.registry).decode().splitlines():
        name, value = line.rsplit(" ", 1)
        if line.startswith("#"):
            out[line] = 0.0
        elif "_created" not in name:  # when the series began: differs by design
            out[name] = float(value)
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["GET", "POST"]), st.sampled_from(["/tokenize", "/v1/chat/completions/render", "none"]),
    st.sampled_from([200, 400, 404, 413, 500]),
    st.one_of(st.sampled_from([0.0005, 0.001, 0.01, 0.1, 0.5, 1.0, 60.0, 61.0]), st.floats(0, 100)),
    st.integers(0, 1 << 20), st.integers(0, 1 << 20),
), max_size=30))
def test_totals_flushed_later_expose_as_observing_each_request(answers):
    """The in-process totals give prometheus_client's own exposition of the same requests
    (bucket edges included), so batching changes no number."""
    batched, direct = Metrics(), Metrics()
    for method, route, status, seconds, size_in, size_out in answers:
        batched.observe(method, route, status, seconds, size_in, size_out)
        direct.prom.requests.labels(method, f"{status // 100}xx", route).inc()
        direct.prom.request_size.labels(route).observe(size_in)
        direct.prom.response_size.labels(route).observe(size_out)
        direct.prom.highr.observe(seconds)
        direct.prom.duration.labels(method, route).observe(seconds)
        direct.prom.latency.labels(route).observe(seconds)
        if status >= 400:
            direct.prom.errors.labels(route, str(status)).inc()
    memo = BoundedLRU(1 << 10, name="test_memo")
    memo.put_many([("a", 1, 1)])
    memo.get("a"), memo.get("a"), memo.get("b")
    direct.prom.cache.labels("test_memo", "hit").inc(2)
    direct.prom.cache.labels("test_memo", "miss").inc(1)
    batched.tokens("/tokenize", rendered=7)
    direct.prom.tokens_rendered.labels("/tokenize").inc(7)
    batched.flush()
    got, want = _exposition(batched), _exposition(direct)
    assert got.keys() == want.keys()
    for name, value in want.items():  # sums are added in another order
        assert got[name] == (pytest.approx(value) if "_sum" in name else value), name
