"""A stub engine and gateway servers (tokenbridge serve --engine-url) on loopback.

Imported by the test modules for their fixtures (a conftest here would shadow the root one).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import PROFILES, SHARED, replay, server_command


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StubEngine:
    """``python -m tokenbridge.testing.stub_engine`` in its own process."""

    def __init__(self, *args: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tokenbridge.testing.stub_engine", "--port", str(self.port), *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            if replay.http(self.port, "GET", "/health", timeout=2)[0] == 200:
                return
            time.sleep(0.1)
        raise RuntimeError("stub engine did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def control(self, **settings) -> None:
        status, _ = replay.http(self.port, "POST", "/stub/control", settings)
        assert status == 200

    def stats(self) -> dict:
        return replay.http(self.port, "GET", "/stub/stats")[1]

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


class Gateways:
    """One gateway server per profile, all in front of one stub engine."""

    def __init__(self, engine: StubEngine, *flags: str) -> None:
        self.engine = engine
        self.flags = " ".join(flags)
        self.running: dict[str, tuple] = {}

    def port(self, profile: str) -> int:
        if profile not in self.running:
            from pathlib import Path
            import tempfile

            cmd, use_ft = server_command()
            template = cmd + f" --workers 1 --engine-url {self.engine.url} {self.flags}"
            log_dir = Path(tempfile.mkdtemp(prefix="tokenbridge-gateway-"))
            self.running[profile] = replay.start_server(template, PROFILES[profile], SHARED, use_ft, log_dir)
        return self.running[profile][1]

    def stop(self) -> None:
        for proc, _ in self.running.values():
            replay.stop_server(proc)
        self.running.clear()


@pytest.fixture(scope="session")
def stub_engine():
    e = StubEngine("--chunking", "random", "--seed", "18")
    yield e
    e.stop()


@pytest.fixture(scope="module")
def gateways(stub_engine):
    g = Gateways(stub_engine)
    yield g
    g.stop()


def sse(port: int, path: str, body: dict, headers: dict | None = None, timeout: float = 60) -> tuple[int, list]:
    """POST and read the event stream: (status, events), an event being its parsed JSON or
    the string ``[DONE]``; a non-200 answer gives its JSON body as the only event."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        raw = resp.read().decode()
        if resp.status != 200:
            return resp.status, [json.loads(raw)]
        assert resp.getheader("content-type", "").startswith("text/event-stream")
        events = []
        for block in raw.split("\n\n"):
            if not block:
                continue
            assert block.startswith("data: "), block
            data = block[6:]
            events.append(data if data == "[DONE]" else json.loads(data))
        return resp.status, events
    finally:
        conn.close()
