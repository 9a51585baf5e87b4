"""Bounded fuzzing in CI: mutated corpus requests on every route of a real qwen3 server get an
answer in time, never a 5xx, and vLLM's error envelope when they fail (``corpus_mutations``).
``bench/fuzz_routes.py`` runs the same mutations for 100,000 requests."""

from __future__ import annotations

import http.client

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import PARITY, PROFILES
from tests.server import corpus_mutations as cm

TIMEOUT_S = 30
SERVED = PROFILES["qwen3"]["served_name"]
CORPUS = cm.corpus_requests(PARITY, SERVED)
BY_ROUTE = {route: [b for p, b in CORPUS if p == route] for route in cm.ROUTES}
FUZZ = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))  # fmt: skip


@pytest.fixture(scope="module")
def port(servers):
    return servers.port("qwen3")


def _send(port: int, method: str, path: str, body: bytes | None, ctype: str | None = "application/json"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        conn.request(method, path, body=body, headers={"content-type": ctype} if ctype else {})
        r = conn.getresponse()  # a hang is a TimeoutError: the test fails
        return r.status, r.read()
    finally:
        conn.close()


def test_the_corpus_has_requests_for_every_route():
    assert all(len(BY_ROUTE[r]) >= 5 for r in cm.ROUTES), {r: len(b) for r, b in BY_ROUTE.items()}


@pytest.mark.parametrize("route", cm.ROUTES)
@FUZZ
@given(data=st.data(), rnd=st.randoms(use_true_random=False))
def test_mutated_corpus_requests_get_a_clean_answer(port, route, data, rnd):
    body = data.draw(st.sampled_from(BY_ROUTE[route]))
    raw = cm.encode(cm.mutate(rnd, body))
    status, payload = _send(port, "POST", route, raw)
    assert cm.check_answer(status, payload) is None, (raw[:500], status, payload[:300])


@pytest.mark.parametrize("route", cm.ROUTES)
@FUZZ
@given(data=st.data(), rnd=st.randoms(use_true_random=False))
def test_damaged_corpus_bytes_get_a_clean_answer(port, route, data, rnd):
    raw = cm.raw_mutation(rnd, cm.encode(data.draw(st.sampled_from(BY_ROUTE[route]))))
    status, payload = _send(port, "POST", route, raw)
    assert cm.check_answer(status, payload) is None, (raw[:500], status, payload[:300])


@FUZZ
@given(method=st.sampled_from(["GET", "HEAD", "PUT", "DELETE", "POST", "PATCH"]),
       path=st.sampled_from(cm.GET_PATHS + cm.ROUTES))  # fmt: skip
def test_any_method_on_any_route_gets_a_clean_answer(port, method, path):
    status, payload = _send(port, method, path, None, None)
    assert cm.check_answer(status, payload, method, path) is None, (method, path, status, payload[:300])
