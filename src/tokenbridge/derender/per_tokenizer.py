"""Lookup tables the derender stage keeps per tokenizer (token bytes, logprob pieces)."""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")

# More tokenizers than this in one process (tests, mostly) and the tables start over.
MAX_TOKENIZERS = 16


class PerTokenizer(Generic[T]):
    """``make(tok)`` once per tokenizer, found by the tokenizer's identity: each table holds its
    tokenizer (``.tok``), so a recycled ``id()`` never returns another tokenizer's table."""

    def __init__(self, make: Callable[[Any], T]) -> None:
        self._make = make
        self._tables: dict[int, T] = {}

    def __call__(self, tok: Any) -> T:
        table = self._tables.get(id(tok))
        if table is None or table.tok is not tok:  # type: ignore[attr-defined]
            if len(self._tables) >= MAX_TOKENIZERS:
                self._tables.clear()
            table = self._tables[id(tok)] = self._make(tok)
        return table
