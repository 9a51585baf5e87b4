"""vLLM's frontend flags on a real server: CORS, --root-path, request-id headers, /openapi.json and
/docs, logs (start-up line, access log off by default, JSON lines, errors with their request id),
--uds and TLS."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import MODELS

QWEN3 = str(MODELS / "qwen3")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *extra: str, log_path=None, env=None) -> None:
        self.port = _free_port()
        self.log = open(log_path, "w+") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tokenbridge.cli", "serve", QWEN3, "--host", "127.0.0.1", "--port", str(self.port),
             "--workers", "1", "--served-model-name", "qwen3", *extra],
            start_new_session=True, stderr=self.log, env=env,
        )

    def wait(self, ready) -> None:
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, "server exited"
            try:
                if ready():
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.05)

    def request(self, method: str, path: str, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, data, {"content-type": "application/json", **(headers or {})})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(15)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("logs") / "server.log"
    s = Server("--allowed-origins", '["https://app.example"]', "--allow-credentials", "--root-path", "/render",
               "--enable-request-id-headers", "--logging-config.formatter", "json", "--tensor-parallel-size", "2",
               log_path=log)
    s.wait(lambda: s.request("GET", "/health")[0] == 200)
    yield s
    s.stop()


CHAT = {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]}


def test_cors_preflight_and_answers(server):
    status, headers, body = server.request("OPTIONS", "/v1/chat/completions/render", headers={
        "origin": "https://app.example", "access-control-request-method": "POST",
        "access-control-request-headers": "content-type"})
    assert status == 200 and body == b"OK"
    assert headers["access-control-allow-origin"] == "https://app.example"
    assert headers["access-control-allow-credentials"] == "true"
    assert "POST" in headers["access-control-allow-methods"]
    assert headers["access-control-allow-headers"] == "content-type"
    status, headers, _ = server.request("OPTIONS", "/v1/chat/completions/render", headers={
        "origin": "https://evil.example", "access-control-request-method": "POST"})
    assert status == 400
    status, headers, _ = server.request("POST", "/v1/chat/completions/render", CHAT, {"origin": "https://app.example"})
    assert status == 200 and headers["access-control-allow-origin"] == "https://app.example"
    status, headers, _ = server.request("POST", "/v1/chat/completions/render", CHAT, {"origin": "https://evil.example"})
    assert status == 200 and "access-control-allow-origin" not in headers


def test_root_path_prefix_is_optional(server):
    with_prefix = server.request("POST", "/render/v1/chat/completions/render", CHAT)
    without = server.request("POST", "/v1/chat/completions/render", CHAT)
    assert with_prefix[0] == without[0] == 200
    assert json.loads(with_prefix[2])["token_ids"] == json.loads(without[2])["token_ids"]


def test_request_id_header_echoed_or_made(server):
    _, headers, _ = server.request("POST", "/v1/chat/completions/render", CHAT, {"x-request-id": "abc-123"})
    assert headers["x-request-id"] == "abc-123"
    _, headers, _ = server.request("GET", "/v1/models")
    assert len(headers["x-request-id"]) == 32


def test_openapi_from_the_msgspec_types(server):
    status, headers, body = server.request("GET", "/openapi.json")
    assert status == 200 and headers["content-type"] == "application/json"
    spec = json.loads(body)
    assert spec["openapi"].startswith("3.")
    assert spec["servers"] == [{"url": "/render"}]
    ref = spec["paths"]["/v1/chat/completions/render"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    name = ref["$ref"].rsplit("/", 1)[1]
    assert "messages" in spec["components"]["schemas"][name]["properties"]
    assert "/v1/completions/derender" in spec["paths"]
    status, headers, body = server.request("GET", "/docs")
    assert status == 200 and b"swagger-ui" in body and b"/render/openapi.json" in body


def test_logs_are_json_lines_with_request_ids(server):
    server.request("POST", "/v1/chat/completions/render", {"model": "nope", "messages": []}, {"x-request-id": "rid-404"})
    time.sleep(0.2)
    server.log.seek(0)
    lines = [json.loads(line) for line in server.log.read().splitlines() if line.strip()]
    start = [r for r in lines if "serving" in r["message"]]
    assert len(start) == 1
    for part in ("as qwen3", "http://127.0.0.1:", "workers 1", "tool parser none", "encoder tokenizers",
                 "stream state key"):
        assert part in start[0]["message"]
    assert any(r["level"] == "WARNING" and "--tensor-parallel-size" in r["message"] for r in lines)
    errors = [r for r in lines if r.get("request_id") == "rid-404"]
    assert errors and errors[0]["status"] == 404 and "does not exist" in errors[0]["message"]
    assert not [r for r in lines if r.get("status") == 200]  # no access log unless --enable-log-requests


def test_docs_can_be_disabled():
    s = Server("--disable-fastapi-docs")
    try:
        s.wait(lambda: s.request("GET", "/health")[0] == 200)
        assert s.request("GET", "/openapi.json")[0] == 404
    finally:
        s.stop()


def test_unix_socket(tmp_path):
    path = str(tmp_path / "tb.sock")
    s = Server("--uds", path)

    def get(p: str):
        conn = http.client.HTTPConnection("localhost", timeout=10)
        conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.sock.connect(path)
        conn.request("GET", p)
        r = conn.getresponse()
        return r.status, r.read()

    try:
        s.wait(lambda: get("/health")[0] == 200)
        assert json.loads(get("/v1/models")[1])["data"][0]["id"] == "qwen3"
    finally:
        s.stop()


def test_tls(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    s = Server("--ssl-keyfile", str(key), "--ssl-certfile", str(cert))
    ctx = ssl.create_default_context(cafile=str(cert))
    ctx.check_hostname = False

    def get(p: str):
        with urllib.request.urlopen(f"https://127.0.0.1:{s.port}{p}", context=ctx, timeout=10) as r:
            return r.status, r.read()

    try:
        s.wait(lambda: get("/health")[0] == 200)
        assert json.loads(get("/v1/models")[1])["data"][0]["id"] == "qwen3"
    finally:
        s.stop()
