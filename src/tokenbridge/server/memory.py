"""Give the heap back to the system after a large request, and keep start-up's buffers off it.

Parsing a multi-megabyte body and tokenizing it allocates hundreds of megabytes (Python
objects, the tokenizer's encodings) that are freed when the answer is sent, but glibc keeps
freed memory in its arenas: RSS would stay at the peak of the largest request ever served.
``malloc_trim`` returns the free pages; it costs about a millisecond, and the next request
faults the pages in again, so it runs only after requests of ``TRIM_AFTER_BYTES`` or more,
and at most once every ``RELEASE_INTERVAL_S`` (``HeapRelease``).

Loading the tokenizers allocates large short-lived buffers (the ``tokenizer.json`` text, parse
tables) among the vocabulary's long-lived allocations. glibc serves a large allocation from its
own mapping, but raises that threshold each time one is freed, so the later buffers of the
load land on the heap, where the live allocations around them keep their pages resident
(~9 MB for qwen3). ``map_large_buffers`` fixes the threshold for start-up; ``serving_thresholds``
then sets the ceilings the dynamic thresholds reach, so requests allocate as they did.

The cycle collector is set for serving once start-up is done (``freeze_startup_objects``).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc

TRIM_AFTER_BYTES = 1 << 20
RELEASE_INTERVAL_S = 0.1
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
STARTUP_MMAP_THRESHOLD = 128 * 1024  # glibc's initial value
SERVING_MMAP_THRESHOLD = 32 * 1024 * 1024  # the dynamic threshold's ceiling on 64-bit glibc
SERVING_TRIM_THRESHOLD = 2 * SERVING_MMAP_THRESHOLD  # and the trim threshold it sets with it


def _load_trim():
    # The process's own symbols, libc's among them: ``ctypes.util.find_library`` would import
    # subprocess and tempfile (~1 MB resident) and may run ``ldconfig`` to find the same library.
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_malloc_trim = _load_trim()


def _mallopt(param: int, value: int) -> None:
    try:
        ctypes.CDLL(None).mallopt(param, value)
    except (OSError, AttributeError):  # not glibc
        pass


def map_large_buffers() -> None:
    """Until ``serving_thresholds``: every allocation of 128 KB or more gets a mapping of its
    own, returned to the system when freed."""
    _mallopt(_M_MMAP_THRESHOLD, STARTUP_MMAP_THRESHOLD)


def serving_thresholds() -> None:
    """Once the tokenizers are loaded: the heap serves what it would with glibc's dynamic
    thresholds grown, so a request's buffers are reused rather than mapped and faulted in."""
    _mallopt(_M_MMAP_THRESHOLD, SERVING_MMAP_THRESHOLD)
    _mallopt(_M_TRIM_THRESHOLD, SERVING_TRIM_THRESHOLD)


# Tracked allocations between young-generation collections (CPython's default is 700).
YOUNG_COLLECTION_THRESHOLD = 2000


def freeze_startup_objects() -> None:
    """Put what start-up made (the model's tables, templates, parsers: ~25k tracked objects
    for qwen3, kept for the process's life) out of the cycle collector's reach, and collect
    the young generation every 2,000 tracked allocations rather than 700.

    A request makes many short-lived tracked objects (its body parsed into dicts and lists, its
    answer's lists). A 2k-token derender with top-5 logprobs parsed into dicts set off ~25
    collections that walked the start-up objects and found no garbage (~18% of its time).
    Frozen before ``--workers`` fork, the start-up objects' pages also stay shared: a
    collection never writes to them. What start-up drops later (``tokenizers`` once fastokens
    serves) is freed by its reference counts; 9 objects in cycles stay.
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, older, oldest)


def release() -> None:
    """Return the heap's free pages to the system (a no-op where malloc_trim is missing)."""
    if _malloc_trim is not None:
        _malloc_trim(0)


class HeapRelease:
    """``release`` once a burst of large requests is over, not after each of them.

    The first large request schedules a release ``RELEASE_INTERVAL_S`` later; those answered
    before it fires are covered by it. A steady load of large requests then trims ten times a
    second, not after every one (a 2k-token logprobs derender spent ~5% of its time trimming and
    faulting the same pages back in), and the heap is back to its size within the interval of
    the last one. The peak is the same: each request reached it anyway.
    """

    def __init__(self) -> None:
        self._pending: asyncio.TimerHandle | None = None
        self.runs = 0

    def after_large_request(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._pending is None:
            self._pending = loop.call_later(RELEASE_INTERVAL_S, self._run)

    def _run(self) -> None:
        self._pending = None
        self.runs += 1
        release()
