"""The thread that answers large requests, ended once idle so what it cached is freed.

A body of 256 KB or more (``app.OFFLOAD_BODY_BYTES_FAST_ENCODER``) is answered off the event
loop, one at a time. fastokens keeps a pretoken cache per thread that encodes (16 MB at once,
growing with the distinct words seen to ~80 MB), freed only when that thread ends. A thread
kept for the process's life held it after one large request: +20 MB of RSS for good after a
single 300 KB ``/tokenize``. So the thread ends once it has waited ``IDLE_S`` with nothing to
do, and the next large request starts a new one: that costs its first encode ~5 ms for a 300 KB
text (the cache built again), at most ~1% of the time between two such requests.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable

IDLE_S = 0.5


class HeavyThread(Executor):
    """An executor of one thread that ends after ``IDLE_S`` idle; ``on_end`` runs (on that thread)
    as it ends, for the caller to give the freed memory back once it is gone."""

    def __init__(self, on_end: Callable[[], Any] | None = None, idle_s: float = IDLE_S) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False
        self._on_end = on_end
        self._idle_s = idle_s
        self.started = 0  # threads started so far

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        with self._lock:
            self._jobs.put((future, fn, args, kwargs))
            if not self._running:
                self._running = True
                self.started += 1
                threading.Thread(target=self._work, name="tokenbridge-heavy", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:  # a job put before this lock is taken keeps the thread
                    if not self._jobs.empty():
                        continue
                    self._running = False
                break
            _run(*job)
            del job  # the request is not held while idle
        if self._on_end is not None:
            self._on_end()


def _run(future: Future, fn: Callable, args: tuple, kwargs: dict) -> None:
    if future.set_running_or_notify_cancel():
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:
            future.set_exception(e)
