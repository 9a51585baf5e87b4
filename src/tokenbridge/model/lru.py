"""A thread-safe LRU bounded by the size of what it holds, shared by the exact caches."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import ClassVar, Generic, Hashable, Iterable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedLRU(Generic[K, V]):
    """Entries with a size each; the least recently used go once the total passes
    ``max_size`` (or the count passes ``max_entries``). An entry bigger than a quarter of the
    budget is not kept, so one huge value cannot flush everything else.

    Lookups are counted (``hits``, ``misses``) under the lock a lookup takes anyway; the
    server's metrics read the counts of every live cache (``instances``) when they flush."""

    instances: ClassVar[weakref.WeakSet] = weakref.WeakSet()

    def __init__(self, max_size: int, max_entries: int | None = None, name: str = "cache") -> None:
        self.name = name
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._size = 0
        self._max_size = max_size
        self._max_entries = max_entries
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        BoundedLRU.instances.add(self)

    @property
    def size(self) -> int:
        return self._size

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        return hit[0]

    def count_miss(self) -> None:
        """A lookup answered without asking (the caller knew it would miss)."""
        with self._lock:
            self.misses += 1

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The keys present (refreshed), under one lock."""
        found: dict[K, V] = {}
        asked = 0
        with self._lock:
            for key in keys:
                asked += 1
                hit = self._entries.get(key)
                if hit is not None:
                    self._entries.move_to_end(key)
                    found[key] = hit[0]
            self.hits += len(found)
            self.misses += asked - len(found)
        return found

    def put_many(self, items: Iterable[tuple[K, V, int]]) -> None:
        """Keep each ``(key, value, size)`` not already held, then evict down to the budget."""
        with self._lock:
            for key, value, size in items:
                if size <= self._max_size // 4 and key not in self._entries:
                    self._entries[key] = (value, size)
                    self._size += size
            while self._size > self._max_size or (
                self._max_entries is not None and len(self._entries) > self._max_entries
            ):
                _, (_, size) = self._entries.popitem(last=False)
                self._size -= size
