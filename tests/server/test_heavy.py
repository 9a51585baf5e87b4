"""The thread for large requests (server/heavy.py) answers them one at a time, ends once idle,
and so leaves nothing of a large request behind: a real server's RSS and threads come back."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest

from tokenbridge.server import app as app_module
from tokenbridge.server.heavy import HeavyThread

from tests.server.test_workers import QWEN3, _free_port

IDLE_S = 0.05


def _heavy_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tokenbridge-heavy"]


def _wait(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_jobs_run_one_at_a_time_on_one_thread_that_ends_once_idle():
    ended = []
    heavy = HeavyThread(on_end=lambda: ended.append(threading.current_thread().name), idle_s=IDLE_S)
    running, overlaps, seen = [0], [], set()

    def job(i: int) -> int:
        running[0] += 1
        overlaps.append(running[0])
        seen.add(threading.get_ident())
        time.sleep(0.002)
        running[0] -= 1
        return i * i

    futures = [heavy.submit(job, i) for i in range(20)]
    assert [f.result(5) for f in futures] == [i * i for i in range(20)]
    assert max(overlaps) == 1 and len(seen) == 1 and heavy.started == 1
    assert _wait(lambda: not _heavy_threads())
    assert ended == ["tokenbridge-heavy"]
    assert heavy.submit(job, 3).result(5) == 9  # the next one starts a new thread
    assert heavy.started == 2
    assert _wait(lambda: len(ended) == 2)


def test_an_error_reaches_its_caller_and_the_thread_goes_on():
    heavy = HeavyThread(idle_s=IDLE_S)
    failing = heavy.submit(lambda: 1 / 0)
    after = heavy.submit(lambda: "still here")
    with pytest.raises(ZeroDivisionError):
        failing.result(5)
    assert after.result(5) == "still here" and heavy.started == 1


def test_a_job_submitted_as_the_thread_winds_down_is_still_run():
    heavy = HeavyThread(idle_s=0.002)
    rng = random.Random(15)
    for i in range(300):
        time.sleep(rng.uniform(0, 0.004))  # around the idle time: some land as it ends
        assert heavy.submit(lambda x=i: x).result(5) == i
    assert 1 < heavy.started < 300


def test_a_large_request_leaves_no_thread_and_no_memory_behind_in_a_real_server():
    port = _free_port()
    log = tempfile.NamedTemporaryFile("w+", suffix=".log")
    cmd = [sys.executable, "-m", "tokenbridge.cli", "serve", str(QWEN3), "--host", "127.0.0.1", "--port", str(port),
           "--served-model-name", "qwen3", "--workers", "1"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=log)
    try:
        assert _wait(lambda: "tokenizer backend: fastokens" in open(log.name).read(), 60), open(log.name).read()
        threads = lambda: len(os.listdir(f"/proc/{proc.pid}/task"))  # noqa: E731
        rss = lambda: int(open(f"/proc/{proc.pid}/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20  # noqa: E731

        def tokenize(text: str) -> dict:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/tokenize", json.dumps(
                {"model": "qwen3", "prompt": text}).encode(), {"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())

        rng = random.Random(16)
        words = lambda n: " ".join("".join(rng.choice("abcdefghij") for _ in range(7)) for _ in range(n))  # noqa: E731
        for _ in range(3):
            tokenize(words(20))  # the event loop's thread has made its own encode caches
        time.sleep(0.5)
        threads_before, rss_before = threads(), rss()
        large = words(40_000)  # 320 KB: answered on the heavy thread
        assert len(large) >= app_module.OFFLOAD_BODY_BYTES_FAST_ENCODER
        assert tokenize(large)["count"] > 40_000
        assert _wait(lambda: threads() == threads_before, 10)
        time.sleep(0.5)  # the heap is given back just after the thread ends
        # A thread kept for good held fastokens' 16 MB table and its caches: +20 MB.
        assert rss() - rss_before < 8, (rss_before, rss())
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()
