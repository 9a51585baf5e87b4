"""The collector set for serving (start-up objects frozen, young collections less often), and
the heap given back after large requests."""

from __future__ import annotations

import asyncio
import gc
import os

from tokenbridge.server import memory


def test_freezing_start_up_objects_keeps_them_out_of_collections_and_raises_the_young_threshold():
    before = gc.get_threshold()
    kept = [[i] for i in range(1000)]  # made "at start-up"
    try:
        memory.freeze_startup_objects()
        assert gc.get_freeze_count() >= len(kept)
        assert not any(obj is kept for obj in gc.get_objects())  # a collection no longer walks it
        assert gc.get_threshold() == (memory.YOUNG_COLLECTION_THRESHOLD, *before[1:])
        cycle = []
        cycle.append(cycle)  # garbage made after start-up is still collected
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_a_burst_of_large_requests_gives_the_heap_back_once_after_it():
    async def burst_then_quiet() -> None:
        heap = memory.HeapRelease()
        loop = asyncio.get_running_loop()
        # ~60 MB of malloc'd buffers (over pymalloc's 512 bytes, under the mmap threshold); one in
        # a hundred stays, so the freed pages sit between live ones, where only a trim returns them.
        buffers = [bytes(2000) for _ in range(30_000)]
        kept = buffers[::100]
        del buffers
        freed_but_held = _rss_mb()
        for _ in range(5):
            heap.after_large_request(loop)
        assert heap.runs == 0
        await asyncio.sleep(memory.RELEASE_INTERVAL_S * 2)
        assert heap.runs == 1
        assert _rss_mb() < freed_but_held - 20
        heap.after_large_request(loop)
        await asyncio.sleep(memory.RELEASE_INTERVAL_S * 2)
        assert heap.runs == 2 and kept

    asyncio.run(burst_then_quiet())
