"""Random ids come from a pool of kernel random bytes: never repeated, and a forked worker
never hands out the bytes its parent still holds."""

from __future__ import annotations

import os

from tokenbridge.protocol.ids import random_hex


def test_ids_do_not_repeat_across_pool_refills():
    ids = [random_hex(8) for _ in range(5000)]  # ~10 refills of the pool
    assert len(set(ids)) == len(ids) and all(len(i) == 16 for i in ids)
    assert len(random_hex(16)) == 32


def test_a_forked_worker_draws_other_bytes_than_its_parent():
    random_hex(8)  # the parent's pool now holds unused bytes
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, random_hex(8).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    assert child != random_hex(8)
