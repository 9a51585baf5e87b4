"""Start-up checks and per-start state: a taken port, a missing template or key file is a
clear error; stream states are signed with a secret that is random per start unless one is
configured, shared by the workers; a crashed worker is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.server.test_workers import QWEN3, _alive, _children, _post, _start, _wait_gone

M = "qwen3"
CHAT = {"model": M, "messages": [{"role": "user", "content": "hi"}]}


def _serve(*extra: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tokenbridge.cli", "serve", str(QWEN3), "--host", "127.0.0.1", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def _stream_state(port: int) -> str:
    body = {
        "model": M, "stream": True, "stream_state": None, "prompt_token_ids": [9707],
        "generate_chunk": {"request_id": "r", "choices": [{"index": 0, "token_ids": [9707]}]}, "chat_request": CHAT,
    }  # fmt: skip
    status, resp = _post(port, "/v1/chat/completions/derender", body)
    assert status == 200, resp
    return resp["stream_state"]


def _continue(port: int, state: str) -> tuple[int, dict]:
    body = {
        "model": M, "stream": True, "stream_state": state, "prompt_token_ids": [9707],
        "generate_chunk": {"request_id": "r", "choices": [{"index": 0, "token_ids": [11]}]}, "chat_request": CHAT,
    }  # fmt: skip
    return _post(port, "/v1/chat/completions/derender", body)


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    return err.decode()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_second_server_on_a_taken_port_exits_with_a_clear_message(workers):
    proc, port = _start("--workers", "2", "--served-model-name", M)  # SO_REUSEPORT sockets hold the port
    try:
        second = _serve("--port", str(port), "--workers", workers)
        assert second.returncode != 0
        assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in second.stderr
        assert _post(port, "/v1/chat/completions/render", CHAT)[0] == 200  # the first one is untouched
    finally:
        _stop(proc)


def test_a_missing_chat_template_file_is_an_error():
    r = _serve("--port", "0", "--chat-template", "/no/such/template.jinja")
    assert r.returncode == 2
    assert "/no/such/template.jinja" in r.stderr and "looks like a" in r.stderr, r.stderr


def test_inline_chat_template_text_is_used_as_the_template():
    proc, port = _start("--workers", "1", "--served-model-name", M, "--chat-template", "{{ messages[0]['content'] }}!")
    try:
        status, resp = _post(port, "/tokenize", {"model": M, "messages": [{"role": "user", "content": "hi"}]})
        assert status == 200 and resp["count"] == 2, resp  # "hi", "!"
    finally:
        _stop(proc)


@pytest.mark.parametrize("content", [None, ""])
def test_an_unreadable_or_empty_state_key_file_is_an_error(tmp_path, content):
    key = tmp_path / "key"
    if content is not None:
        key.write_text(content)
    r = _serve("--port", "0", "--stream-state-key-file", str(key))
    assert r.returncode == 2 and "--stream-state-key-file" in r.stderr, r.stderr


def test_without_a_key_each_start_has_its_own_and_says_so():
    env = {k: v for k, v in os.environ.items() if k != "TOKENBRIDGE_STATE_KEY"}
    a, port_a = _start("--workers", "1", "--served-model-name", M, env=env)
    b, port_b = _start("--workers", "1", "--served-model-name", M, env=env)
    try:
        state = _stream_state(port_a)
        assert _continue(port_a, state)[0] == 200
        status, resp = _continue(port_b, state)  # another deployment: forged, as far as b knows
        assert status == 400 and "integrity check" in resp["error"]["message"], resp
    finally:
        for proc in (a, b):
            assert "TOKENBRIDGE_STATE_KEY is not set" in _stop(proc)


def test_a_shared_key_lets_a_stream_move_between_servers(tmp_path):
    key = tmp_path / "key"
    key.write_text("a deployment secret\n")
    env = dict(os.environ, TOKENBRIDGE_STATE_KEY="a deployment secret")
    a, port_a = _start("--workers", "1", "--served-model-name", M, "--stream-state-key-file", str(key))
    b, port_b = _start("--workers", "1", "--served-model-name", M, env=env)
    try:
        assert _continue(port_b, _stream_state(port_a))[0] == 200
        assert _continue(port_a, _stream_state(port_b))[0] == 200
    finally:
        for proc in (a, b):
            assert "TOKENBRIDGE_STATE_KEY is not set" not in _stop(proc)


def test_the_workers_of_one_start_share_its_random_key():
    env = {k: v for k, v in os.environ.items() if k != "TOKENBRIDGE_STATE_KEY"}
    proc, port = _start("--workers", "2", "--served-model-name", M, env=env)
    try:
        states = [_stream_state(port) for _ in range(12)]  # new connections: both workers answer
        assert all(_continue(port, s)[0] == 200 for s in states for _ in range(2))
    finally:
        _stop(proc)


def test_a_crashed_worker_is_replaced():
    proc, port = _start("--workers", "2", "--served-model-name", M)
    try:
        workers = _children(proc.pid)
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)
        assert _wait_gone([workers[0]]) == []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            now = _children(proc.pid)
            if len(now) == 2 and workers[0] not in now:
                break
            time.sleep(0.05)
        now = _children(proc.pid)
        assert len(now) == 2 and workers[1] in now and all(_alive(p) for p in now), now
        assert all(_post(port, "/v1/chat/completions/render", CHAT)[0] == 200 for _ in range(8))
    finally:
        err = _stop(proc)
    assert f"worker {workers[0]} exited" in err
