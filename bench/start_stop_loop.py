"""Start and stop servers in a loop, under load, and count the starts that failed.

    python bench/start_stop_loop.py [--starts 500] [--profiles all] [--load-threads 2]
        [--workers default] [--faketime none|preload|wrapper]

Each start runs the parity replay's command line for the next profile (cycling through
``../shared/parity/profiles.json``) on a fresh port, waits for ``/health``, renders one
request, then sends SIGTERM to the process group, as replay.py does. A start fails when the
server exits before it is ready, is not ready within 60 s, or does not answer the request;
its exit status and the last lines of its stderr are printed. ``--load-threads`` keeps a
separate qwen3 server busy with renders the whole time (loopback). ``--faketime`` runs the
servers under libfaketime as the corpus tests do: ``preload`` (LD_PRELOAD, what
tests/conftest.py does) or ``wrapper`` (the ``faketime`` command, as replay.py does).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARITY = ROOT.parent / "shared" / "parity"
FAKE_DATE = "2026-01-15 12:00:00"
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(profile: dict, port: int, workers: str) -> list[str]:
    tool = ["--tool-call-parser", profile["tool_parser"], "--enable-auto-tool-choice"] if profile.get("tool_parser") else []
    reasoning = ["--reasoning-parser", profile["reasoning_parser"]] if profile.get("reasoning_parser") else []
    extra = [f.replace("{shared}", str(PARITY.parent)) for f in profile.get("extra_flags", [])]
    w = [] if workers == "default" else ["--workers", workers]
    return [sys.executable, "-m", "tokenbridge.cli", "serve", str((PARITY / profile["model"]).resolve()),
            "--host", "127.0.0.1", "--port", str(port), "--served-model-name", profile["served_name"],
            *tool, *reasoning, *extra, *w]  # fmt: skip


def get(port: int, path: str, body: dict | None = None, timeout: float = 2) -> int:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def one_start(name: str, profile: dict, workers: str, faketime: str) -> str | None:
    port = free_port()
    argv = command(profile, port, workers)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if faketime == "wrapper":
        argv = ["faketime", FAKE_DATE, *argv]
    elif faketime == "preload":
        env.update(LD_PRELOAD=LIBFAKETIME, FAKETIME=f"@{FAKE_DATE}", FAKETIME_DISABLE_SHM="1", FAKETIME_DONT_RESET="1")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, env=env)
    problem = None
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                problem = f"exited {proc.returncode} before ready"
                break
            if get(port, "/health", timeout=1) == 200:
                body = {"model": profile["served_name"], "prompt": "hello"}
                if get(port, "/v1/completions/render", body, timeout=30) != 200:
                    problem = "ready, but a render failed"
                break
            if time.monotonic() > deadline:
                problem = "not ready in 60 s"
                break
            time.sleep(0.05)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(20)
        except ProcessLookupError:  # the whole group is already gone
            proc.wait()
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if problem is None and proc.returncode not in (0, -signal.SIGTERM):
        problem = f"stopped with status {proc.returncode}"
    if problem is not None:
        err = proc.stderr.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        return f"{name}: {problem}; {shlex.join(argv[-6:])}; stderr: {' | '.join(err) or '(empty)'}"
    proc.stderr.close()
    return None


def load(port: int, stop: threading.Event, counter: list) -> None:
    body = {"model": "qwen3", "messages": [{"role": "user", "content": "Load " * 200}]}
    while not stop.is_set():
        get(port, "/v1/chat/completions/render", body, timeout=30)
        counter[0] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=500)
    ap.add_argument("--profiles", default="all")
    ap.add_argument("--load-threads", type=int, default=2)
    ap.add_argument("--workers", default="default")
    ap.add_argument("--faketime", choices=["none", "preload", "wrapper"], default="preload")
    a = ap.parse_args()
    profiles = json.loads((PARITY / "profiles.json").read_text())["profiles"]
    names = sorted(profiles) if a.profiles == "all" else a.profiles.split(",")
    stop = threading.Event()
    counter = [0]
    loader = None
    if a.load_threads:
        lport = free_port()
        loader = subprocess.Popen([sys.executable, "-m", "tokenbridge.cli", "serve", str(PARITY.parent / "models" / "qwen3"),
                                   "--host", "127.0.0.1", "--port", str(lport), "--served-model-name", "qwen3",
                                   "--workers", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)  # fmt: skip
        while get(lport, "/health") != 200:
            time.sleep(0.1)
        for _ in range(a.load_threads):
            threading.Thread(target=load, args=(lport, stop, counter), daemon=True).start()
    failures = []
    t0 = time.monotonic()
    try:
        for i in range(a.starts):
            name = names[i % len(names)]
            problem = one_start(name, profiles[name], a.workers, a.faketime)
            if problem is not None:
                failures.append(problem)
                print(problem, flush=True)
            if (i + 1) % 25 == 0:
                print(f"{i + 1} starts, {len(failures)} failed, {round(time.monotonic() - t0)} s", flush=True)
    finally:
        stop.set()
        if loader is not None:
            os.killpg(loader.pid, signal.SIGTERM)
            loader.wait(20)
    print(json.dumps({"starts": a.starts, "failures": len(failures), "profiles": len(names), "workers": a.workers,
                      "faketime": a.faketime, "load_requests": counter[0],
                      "seconds": round(time.monotonic() - t0, 1)}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
