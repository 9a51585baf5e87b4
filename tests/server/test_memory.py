"""The collector set for serving: start-up objects frozen, young collections less often."""

from __future__ import annotations

import gc

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
