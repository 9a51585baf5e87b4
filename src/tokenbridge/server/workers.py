"""``--workers N``: forked processes serving one port.

The parent loads the model once, reserves the port, then forks: each worker inherits the loaded
model (copy-on-write), so start-up costs one model load. Each worker listens on its own
``SO_REUSEPORT`` socket, so the kernel spreads connections evenly; with one shared listening
socket the first worker to wake accepts every pending connection and a burst of connections
(a load balancer's pool) lands on one core. The parent only supervises: SIGTERM/SIGINT to it stops every
worker, a worker that dies is replaced, and a worker whose parent vanished (even by SIGKILL)
gets SIGTERM from the kernel, so no worker outlives the server.

The kernel's choice of socket is a hash: two connections land on one worker half the time, so
a client with a small pool (a router's two keep-alive connections) would use one core. The
workers therefore share their open-connection counts (``Fleet``); a worker that accepts a
connection while another has fewer passes it on (the socket, before any byte is read, over a
Unix datagram socket), so open connections stay within one of each other across workers.
"""

from __future__ import annotations

import ctypes
import mmap
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


_REUSEPORT = getattr(socket, "SO_REUSEPORT", None)


def bind_socket(host: str, port: int, reuseport: bool = False, listen: bool = True) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuseport:
        sock.setsockopt(socket.SOL_SOCKET, _REUSEPORT, 1)
    sock.bind((host, port))
    if listen:
        sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class Fleet:
    """What the workers of one server share: each one's open-connection count (an anonymous
    shared mapping made before the fork) and an inbox per worker for connections passed on."""

    def __init__(self, workers: int) -> None:
        self.size = workers
        self._shared = mmap.mmap(-1, 8 * workers)
        self.counts = memoryview(self._shared).cast("q")
        self.inboxes = [socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for _ in range(workers)]
        for pair in self.inboxes:
            for end in pair:
                end.setblocking(False)
        self.slot = -1  # this worker's index, set in the worker

    def join(self, slot: int) -> None:
        self.slot = slot
        self.counts[slot] = 0

    @property
    def inbox(self) -> socket.socket:
        return self.inboxes[self.slot][0]

    def opened(self) -> None:
        self.counts[self.slot] += 1

    def closed(self) -> None:
        self.counts[self.slot] -= 1

    def lighter(self) -> int | None:
        """A worker with fewer open connections than this one has, if any (the fewest)."""
        counts = self.counts
        best = min((i for i in range(self.size) if i != self.slot), key=counts.__getitem__, default=None)
        return best if best is not None and counts[best] < counts[self.slot] else None

    def pass_on(self, fd: int, slot: int) -> bool:
        """Send the connection ``fd`` to worker ``slot``; False when its inbox is full."""
        try:
            socket.send_fds(self.inboxes[slot][1], [b"c"], [fd])
        except OSError:
            return False
        return True


def _die_with_parent(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)


def _spawn(run_worker: Callable[[socket.socket, Fleet | None], None], sock: socket.socket, fleet: Fleet | None,
           slot: int) -> int:
    """Fork a worker; with a reserved (not listening) ``SO_REUSEPORT`` socket, the worker
    listens on a socket of its own bound to the same address."""
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
        if _is_reservation(sock):
            host, port = sock.getsockname()[:2]
            sock.close()
            sock = bind_socket(host, port, reuseport=True)
        if fleet is not None:
            fleet.join(slot)
        run_worker(sock, fleet)
    except BaseException as e:  # a worker must never return into the parent's code
        if not isinstance(e, (KeyboardInterrupt, SystemExit)):
            print(f"tokenbridge worker {os.getpid()}: {type(e).__name__}: {e}", file=sys.stderr)
            code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve_workers(
    run_worker: Callable[[socket.socket, Fleet | None], None],
    host: str,
    port: int,
    workers: int,
    sock: socket.socket | None = None,
    on_exit: Callable[[int], None] | None = None,
) -> int:
    """Fork ``workers`` processes running ``run_worker(sock, fleet)`` and supervise them until signalled.
    A given ``sock`` (a Unix socket) is shared as is; ``on_exit(pid)`` runs when a worker ends."""
    if sock is None and _REUSEPORT is not None and workers > 1:
        sock = bind_socket(host, port, reuseport=True, listen=False)  # holds the port, takes no connections
    elif sock is None:
        sock = bind_socket(host, port)
    fleet = Fleet(workers) if workers > 1 else None
    pids: dict[int, int] = {}  # pid -> slot
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    try:
        for slot in range(workers):
            pids[_spawn(run_worker, sock, fleet, slot)] = slot
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid in pids:
                slot = pids.pop(pid)
                if on_exit is not None:
                    on_exit(pid)
                print(f"tokenbridge: worker {pid} exited ({status}); starting another", file=sys.stderr)
                time.sleep(_RESPAWN_PAUSE_S)
                pids[_spawn(run_worker, sock, fleet, slot)] = slot
    except (_Stop, ChildProcessError):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _stop_all(set(pids))
        sock.close()
    return 0


def _is_reservation(sock: socket.socket) -> bool:
    return not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)


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
