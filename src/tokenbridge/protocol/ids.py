"""Random ids (request ids, tool-call ids): hex of the kernel's random bytes, drawn 4 KiB at a
time, so a request pays one ``getrandom`` call per 512 ids instead of one per id."""

from __future__ import annotations

import os
import threading

_POOL_BYTES = 4096
_pool = bytearray()
_lock = threading.Lock()


def random_hex(nbytes: int = 8) -> str:
    """``secrets.token_hex(nbytes)``: as unpredictable, each byte used once."""
    with _lock:
        if len(_pool) < nbytes:
            _pool[:] = os.urandom(_POOL_BYTES)
        out = _pool[-nbytes:]
        del _pool[-nbytes:]
    return out.hex()


os.register_at_fork(after_in_child=_pool.clear)  # workers never share the parent's unused bytes
