"""Give the heap back to the system after a large request.

Parsing a multi-megabyte body and tokenizing it allocates hundreds of megabytes (Python
objects, the tokenizer's encodings) that are freed when the answer is sent, but glibc keeps
freed memory in its arenas: RSS would stay at the peak of the largest request ever served.
``malloc_trim`` returns the free pages; it costs about a millisecond, so it runs only after
requests of ``TRIM_AFTER_BYTES`` or more, once their answer is written.
"""

from __future__ import annotations

import ctypes

TRIM_AFTER_BYTES = 1 << 20


def _load_trim():
    # The process's own symbols, libc's among them: ``ctypes.util.find_library`` would import
    # subprocess and tempfile (~1 MB resident) and may run ``ldconfig`` to find the same library.
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_malloc_trim = _load_trim()


def release() -> None:
    """Return the heap's free pages to the system (a no-op where malloc_trim is missing)."""
    if _malloc_trim is not None:
        _malloc_trim(0)
