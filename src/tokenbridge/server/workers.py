"""``--workers N``: forked processes serving one pre-bound listening socket.

The parent loads the model once, binds the port, then forks: each worker inherits the loaded
model (copy-on-write) and accepts on the shared socket, so start-up costs one model load and
the kernel spreads connections. The parent only supervises: SIGTERM/SIGINT to it stops every
worker, a worker that dies is replaced, and a worker whose parent vanished (even by SIGKILL)
gets SIGTERM from the kernel, so no worker outlives the server.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import time
from typing import Callable

_PR_SET_PDEATHSIG = 1
_RESPAWN_PAUSE_S = 0.5


def default_workers() -> int:
    """One worker per usable core (a worker is one event loop), capped at two so a default
    start stays small; each forked worker adds ~20 MB PSS. ``--workers N`` asks for more."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, 2))


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _die_with_parent(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)


def _spawn(run_worker: Callable[[socket.socket], None], sock: socket.socket) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _die_with_parent(parent)
        run_worker(sock)
    except BaseException as e:  # a worker must never return into the parent's code
        if not isinstance(e, (KeyboardInterrupt, SystemExit)):
            print(f"tokenbridge worker {os.getpid()}: {type(e).__name__}: {e}", file=sys.stderr)
            code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve_workers(run_worker: Callable[[socket.socket], None], host: str, port: int, workers: int) -> int:
    """Fork ``workers`` processes running ``run_worker(sock)`` and supervise them until signalled."""
    sock = bind_socket(host, port)
    pids: set[int] = set()
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    try:
        for _ in range(workers):
            pids.add(_spawn(run_worker, sock))
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid in pids:
                pids.discard(pid)
                print(f"tokenbridge: worker {pid} exited ({status}); starting another", file=sys.stderr)
                time.sleep(_RESPAWN_PAUSE_S)
                pids.add(_spawn(run_worker, sock))
    except (_Stop, ChildProcessError):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _stop_all(pids)
        sock.close()
    return 0


class _Stop(Exception):
    """Raised by the parent's signal handler to leave the blocking wait at once."""


def _raise_stop(signum, frame) -> None:
    raise _Stop


def _stop_all(pids: set[int], grace_s: float = 5.0) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    remaining = set(pids)
    while remaining and time.monotonic() < deadline:
        for pid in list(remaining):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                remaining.discard(pid)
        time.sleep(0.02)
    for pid in remaining:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
