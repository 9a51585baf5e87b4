"""``--workers``: shared-port serving, shutdown without orphans, and long prompts off the loop.

These start real servers on loopback. They assert completion and ordering, never speed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import MODELS

QWEN3 = MODELS / "qwen3"
START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _post(port: int, path: str, body: dict, timeout: float = 60) -> tuple[int, dict]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _start(*extra: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    cmd = [sys.executable, "-m", "tokenbridge.cli", "serve", str(QWEN3), "--host", "127.0.0.1",
           "--port", str(port), *extra]
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    pytest.fail("server did not become ready")


def _wait_gone(pids: list[int], timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_two_workers_serve_and_stop_with_the_parent(sig):
    proc, port = _start("--workers", "2")
    try:
        workers = _children(proc.pid)
        assert len(workers) == 2
        body = {"model": str(QWEN3), "messages": [{"role": "user", "content": "hi"}]}
        results = [None] * 8

        def call(i: int) -> None:
            results[i] = _post(port, "/v1/chat/completions/render", body)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert all(r is not None and r[0] == 200 for r in results), results
        assert len({tuple(r[1]["token_ids"]) for r in results}) == 1
        proc.send_signal(sig)
        assert proc.wait(15) == 0
        assert _wait_gone(workers) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_workers_exit_when_the_parent_is_killed():
    proc, port = _start("--workers", "2")
    workers = _children(proc.pid)
    try:
        assert len(workers) == 2
        proc.kill()
        proc.wait(10)
        assert _wait_gone(workers) == []
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_long_prompt_does_not_stall_short_requests():
    """A ~100k-token render runs on a thread; short renders sent after it finish before it."""
    proc, port = _start("--workers", "1", "--max-model-len", "1000000")
    try:
        words = " ".join(f"word{i % 997} and more text." for i in range(30000))
        long_body = {"model": str(QWEN3), "messages": [{"role": "user", "content": words}]}
        short_body = {"model": str(QWEN3), "messages": [{"role": "user", "content": "hi"}]}
        order: list[str] = []
        started = threading.Event()

        def long_call() -> None:
            started.set()
            status, _ = _post(port, "/v1/chat/completions/render", long_body)
            order.append(f"long:{status}")

        t = threading.Thread(target=long_call)
        t.start()
        started.wait()
        time.sleep(0.05)
        for _ in range(3):
            status, _ = _post(port, "/v1/chat/completions/render", short_body)
            order.append(f"short:{status}")
        t.join(120)
        assert order == ["short:200", "short:200", "short:200", "long:200"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def _sockets_by_worker(workers: list[int], port: int, state: str) -> dict[int, set[str]]:
    """Socket inodes on local ``port`` in TCP ``state`` (01 established, 0A listening) held
    by each worker, from /proc."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == state:
                inodes.add(fields[9])
    held: dict[int, set[str]] = {}
    for pid in workers:
        held[pid] = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                held[pid].add(target[8:-1])
    return held


def test_a_burst_of_connections_is_spread_over_the_workers():
    """A pool of connections opened at once (a load balancer's) must not all land on one
    worker: each worker listens on its own SO_REUSEPORT socket."""
    proc, port = _start("--workers", "2")
    workers = _children(proc.pid)
    conns = []
    try:
        for _ in range(32):
            conns.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        for c in conns:  # one request each, so every connection has been accepted
            c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        for c in conns:
            assert c.recv(4096).startswith(b"HTTP/1.1 200")
        listening = _sockets_by_worker(workers, port, "0A")
        assert all(len(v) == 1 for v in listening.values()), listening
        assert len(set.union(*listening.values())) == 2  # one listening socket per worker
        counts = {pid: len(v) for pid, v in _sockets_by_worker(workers, port, "01").items()}
        assert sum(counts.values()) == 32
        assert min(counts.values()) >= 4, counts
    finally:
        for c in conns:
            c.close()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def test_two_connections_opened_at_once_are_served_by_two_workers():
    """The kernel's hash puts two connections on one worker half the time; a worker that
    accepts one while the other worker has fewer open passes it on, before reading it."""
    proc, port = _start("--workers", "2")
    workers = _children(proc.pid)
    try:
        for _ in range(12):
            pair = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
            for c in pair:  # a request each: served whichever worker ended up with it
                c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            for c in pair:
                assert c.recv(4096).startswith(b"HTTP/1.1 200")
            counts = {pid: len(v) for pid, v in _sockets_by_worker(workers, port, "01").items()}
            assert sorted(counts.values()) == [1, 1], counts
            for c in pair:
                c.close()
            deadline = time.monotonic() + 5
            while any(_sockets_by_worker(workers, port, "01").values()) and time.monotonic() < deadline:
                time.sleep(0.02)  # both workers have seen the close
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)
