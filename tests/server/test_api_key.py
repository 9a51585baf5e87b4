"""``--api-key``: every route but ``/health`` needs ``Authorization: Bearer <key>``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from conftest import MODELS

KEY = "s3cret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str, key: str | None = None) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except urllib.error.URLError:
        return 0  # not listening yet


def test_api_key_guards_every_route_but_health():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokenbridge.cli", "serve", str(MODELS / "qwen3"), "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1", "--api-key", KEY],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while _get(port, "/health") != 200:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        assert _get(port, "/v1/models") == 401
        assert _get(port, "/v1/models", "wrong") == 401
        assert _get(port, "/version") == 401
        assert _get(port, "/v1/models", KEY) == 200
        assert _get(port, "/version", KEY) == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)
