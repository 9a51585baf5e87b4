"""Small text helpers every family uses to hold back a marker split across chunks."""

from __future__ import annotations

import json
from typing import Iterable


def partial_suffix(text: str, markers: Iterable[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some marker.

    That many trailing characters must be held back: the next chunk may complete a marker.
    """
    best = 0
    for m in markers:
        n = min(len(m) - 1, len(text))
        while n > best:
            if text.endswith(m[:n]):
                best = n
                break
            n -= 1
    return best


def find_first(text: str, markers: Iterable[str], start: int = 0) -> tuple[int, str | None]:
    """Position and value of the earliest marker in ``text`` (``(-1, None)`` if none)."""
    pos, found = -1, None
    for m in markers:
        i = text.find(m, start)
        if i != -1 and (pos == -1 or i < pos or (i == pos and len(m) > len(found))):
            pos, found = i, m
    return pos, found


def dumps_args(value) -> str:
    """Arguments re-serialized the way vLLM's parsers do: ``json.dumps(..., ensure_ascii=False)``."""
    return json.dumps(value, ensure_ascii=False)
