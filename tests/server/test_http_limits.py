"""The bare HTTP server against slow, stalled and malformed clients, on real servers.

One qwen3 server with short timeouts (header 1 s, body 1.5 s, keep-alive 1 s), and one with a
cap of 24 connections (and long timeouts, so only the cap closes its stalled connections).
Each test speaks raw HTTP/1.1 over a socket and bounds every wait.
"""

from __future__ import annotations

import re
import socket
import time

import pytest

from tests.server.test_workers import _start

HEADER_S, BODY_S, IDLE_S, CAP = 1.0, 1.5, 1.0, 24
SLACK_S = 1.0
TOKENIZE = b'{"model":"qwen3","prompt":"hi"}'


@pytest.fixture(scope="module")
def port():
    proc, port = _start(
        "--workers", "1", "--served-model-name", "qwen3", "--header-timeout", str(HEADER_S),
        "--body-timeout", str(BODY_S), "--keep-alive-timeout", str(IDLE_S), "--max-body-bytes", "4096",
    )  # fmt: skip
    yield port
    proc.terminate()
    proc.wait(15)


@pytest.fixture(scope="module")
def capped():
    proc, port = _start(
        "--workers", "1", "--served-model-name", "qwen3", "--max-connections", str(CAP),
        "--header-timeout", "120", "--body-timeout", "120", "--keep-alive-timeout", "120",
    )  # fmt: skip
    yield port
    proc.terminate()
    proc.wait(15)


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(HEADER_S + BODY_S + IDLE_S + 5)
    return s


def _read_until_closed(s: socket.socket) -> tuple[bytes, float]:
    t0 = time.monotonic()
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out, time.monotonic() - t0


def _statuses(raw: bytes) -> list[int]:
    """The status of each response in ``raw`` (a response may follow a body with no newline)."""
    return [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", raw)]


def _post(path: bytes, body: bytes, length: int | None = None, extra: bytes = b"") -> bytes:
    n = len(body) if length is None else length
    return (
        b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra
        + b"Content-Length: " + str(n).encode() + b"\r\n\r\n" + body
    )  # fmt: skip


def _health_ok(port: int) -> bool:
    s = _connect(port)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    raw, _ = _read_until_closed(s)
    return _statuses(raw) == [200]


def test_headers_sent_one_byte_at_a_time_get_a_408_within_the_header_timeout(port):
    s = _connect(port)
    t0 = time.monotonic()
    s.sendall(b"GET /health HTTP/1.1\r\n")
    raw = b""
    while time.monotonic() - t0 < HEADER_S + SLACK_S + 2:
        try:
            s.sendall(b"X")
        except OSError:
            break
        s.settimeout(0.2)
        try:
            raw += s.recv(4096)
            if raw:
                break
        except socket.timeout:
            continue
    assert _statuses(raw) == [408], raw
    assert time.monotonic() - t0 < HEADER_S + SLACK_S


def test_a_body_shorter_than_its_content_length_gets_a_408_within_the_body_timeout(port):
    s = _connect(port)
    s.sendall(_post(b"/tokenize", b"{", length=100))
    raw, waited = _read_until_closed(s)
    assert _statuses(raw) == [408], raw
    assert BODY_S - 0.2 < waited < BODY_S + SLACK_S


def test_a_trickled_body_does_not_extend_the_body_timeout(port):
    s = _connect(port)
    s.sendall(_post(b"/tokenize", b"{", length=1000))
    t0 = time.monotonic()
    try:
        for _ in range(int((BODY_S + SLACK_S) / 0.1) + 5):
            s.sendall(b" ")
            time.sleep(0.1)
    except OSError:
        pass
    raw, _ = _read_until_closed(s)
    assert _statuses(raw) == [408], raw
    assert time.monotonic() - t0 < BODY_S + SLACK_S + 0.5


def test_an_idle_connection_closes_after_the_keep_alive_timeout_even_with_stray_newlines(port):
    s = _connect(port)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.1)
    assert _statuses(s.recv(4096)) == [200]
    t0 = time.monotonic()
    try:
        for _ in range(int((IDLE_S + SLACK_S) / 0.1) + 5):
            s.sendall(b"\r\n")  # between requests: ignored, and it does not reset the deadline
            time.sleep(0.1)
    except OSError:
        pass
    raw, _ = _read_until_closed(s)
    assert raw == b""
    assert time.monotonic() - t0 < IDLE_S + SLACK_S + 0.5


def test_bytes_past_the_content_length_are_the_next_request_answered_in_order(port):
    s = _connect(port)
    body = b'{"model":"qwen3","prompt":"hi"}'
    s.sendall(_post(b"/tokenize", body, length=10))  # the rest of the body is not HTTP
    raw, _ = _read_until_closed(s)
    assert _statuses(raw) == [400, 400], raw
    first, second = raw.split(b"HTTP/1.1 ")[1:]
    assert b"json_invalid" in first  # the request, cut at its Content-Length
    assert b"connection: close" in second and b"Invalid HTTP request" in second


def test_a_content_length_that_fits_a_following_request_serves_both(port):
    s = _connect(port)
    s.sendall(_post(b"/tokenize", TOKENIZE) + b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    raw, _ = _read_until_closed(s)
    assert _statuses(raw) == [200, 200], raw
    assert raw.index(b'"tokens"') < raw.index(b'"version"')


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        b"Content-Length: -1\r\n",
        b"Content-Length: 1e3\r\n",
    ],
)
def test_conflicting_or_malformed_content_lengths_are_a_400(port, headers):
    s = _connect(port)
    s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers + b"\r\n{}")
    raw, _ = _read_until_closed(s)
    assert _statuses(raw) == [400], raw


def test_oversized_headers_are_a_431(port):
    s = _connect(port)
    s.sendall(b"GET /health HTTP/1.1\r\nX-A: " + b"a" * 70_000 + b"\r\n\r\n")
    raw, _ = _read_until_closed(s)
    assert _statuses(raw) == [431], raw[:80]


def test_a_declared_body_past_max_body_bytes_is_a_413_before_it_is_read(port):
    s = _connect(port)
    s.sendall(_post(b"/tokenize", b"", length=5000))
    raw, waited = _read_until_closed(s)
    assert _statuses(raw) == [413], raw
    assert b"exceeds the limit of 4096 bytes" in raw and waited < BODY_S


def test_a_chunked_body_growing_past_max_body_bytes_is_a_413(port):
    s = _connect(port)
    s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(3):
        s.sendall(b"800\r\n" + b" " * 0x800 + b"\r\n")
    raw, _ = _read_until_closed(s)
    assert _statuses(raw) == [413], raw


def test_pipelined_requests_are_answered_in_order(port):
    s = _connect(port)
    s.sendall(
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + _post(b"/tokenize", TOKENIZE)
        + b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )  # fmt: skip
    raw, _ = _read_until_closed(s)
    assert _statuses(raw) == [200, 200, 200], raw
    assert raw.index(b'"tokens"') < raw.index(b'"version"')


def test_at_the_connection_cap_the_oldest_stalled_connections_give_way_and_health_answers(capped):
    port = capped
    held = []
    for _ in range(CAP + 2):
        s = _connect(port)
        s.sendall(_post(b"/tokenize", b"{", length=100))
        held.append(s)
        time.sleep(0.01)
    time.sleep(0.2)
    for _ in range(3):
        assert _health_ok(port)
    # Each connection past the cap displaced the oldest stalled one: the last two stalled
    # requests displaced the first two, the first /health the third; then there was room.
    for s in held[:3]:
        s.settimeout(0.5)
        assert s.recv(4096) == b""
    for s in held[3:]:  # the rest are still held until their body timeout
        s.settimeout(0.05)
        with pytest.raises(socket.timeout):
            s.recv(4096)
    for s in held:
        s.close()


def test_at_the_connection_cap_idle_connections_give_way_before_stalled_ones(capped):
    port = capped
    time.sleep(0.5)  # let the server see earlier tests' connections close
    stalled = []
    for _ in range(CAP - 1):
        s = _connect(port)
        s.sendall(_post(b"/tokenize", b"{", length=100))
        stalled.append(s)
    idle = _connect(port)  # the newest, but idle (no request begun)
    time.sleep(0.2)
    assert _health_ok(port)
    idle.settimeout(0.5)
    assert idle.recv(4096) == b""
    stalled[0].settimeout(0.05)
    with pytest.raises(socket.timeout):
        stalled[0].recv(4096)
    for s in stalled:
        s.close()


def test_the_default_body_limit_comes_from_max_model_len_and_max_logprobs():
    proc, port = _start("--workers", "1", "--max-model-len", "2048", "--max-logprobs", "20")
    try:
        limit = 2048 * 64 * 22 + (1 << 20)
        s = _connect(port)
        s.sendall(_post(b"/tokenize", b"", length=limit + 1))
        raw, _ = _read_until_closed(s)
        assert _statuses(raw) == [413] and f"limit of {limit} bytes".encode() in raw, raw
        s = _connect(port)
        body = b'{"model":"x","prompt":"' + b"a" * (limit - 64) + b'"}'
        s.sendall(_post(b"/tokenize", body, extra=b"Connection: close\r\n"))
        raw, _ = _read_until_closed(s)
        assert _statuses(raw) == [404], raw[:200]  # read and parsed: the model name is wrong
    finally:
        proc.terminate()
        proc.wait(15)
