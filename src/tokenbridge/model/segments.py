"""An exact tokenization cache for the repeated parts of chat prompts.

``tokenizers`` first splits the text on added tokens (``<|im_start|>`` …) and then encodes
every piece between them on its own. So the ids of a prompt are the ids of its pieces, and a
piece that comes back (the system prompt and tools of a multi-turn chat, earlier turns) can
be served from a cache. The cache changes speed, never ids: it is only used for tokenizers
where that split is exactly how ``tokenizers`` works (no added token strips spaces or needs
word boundaries; added tokens matched after normalization stay inside pieces).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Callable

# Pieces shorter than this are cheap to encode; caching them would only churn the cache.
MIN_CACHED_CHARS = 256


class SegmentCache:
    """Encodes text piece by piece between added tokens, caching long pieces (LRU by chars)."""

    def __init__(
        self,
        added_tokens: list[dict],
        encode_piece: Callable[[str], list[int]],
        max_chars: int = 8 * 1024 * 1024,
    ) -> None:
        self._ids = {a["content"]: a["id"] for a in added_tokens if not a.get("normalized")}
        literals = sorted(self._ids, key=len, reverse=True)
        self._split = re.compile("|".join(map(re.escape, literals))) if literals else None
        self._encode_piece = encode_piece
        self._cache: OrderedDict[str, list[int]] = OrderedDict()
        self._chars = 0
        self._max_chars = max_chars
        self._lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def applies_to(spec_added_tokens: list[dict], pre_tokenizer: dict | None) -> bool:
        """Whether piecewise encoding is exactly what ``tokenizers`` does for this vocabulary."""
        if any(a.get("lstrip") or a.get("rstrip") or a.get("single_word") for a in spec_added_tokens):
            return False
        return not _prepends_only_first(pre_tokenizer or {})

    def encode(self, text: str) -> list[int]:
        if self._split is None:
            return self._piece(text)
        out: list[int] = []
        pos = 0
        for m in self._split.finditer(text):
            if m.start() > pos:
                out += self._piece(text[pos : m.start()])
            out.append(self._ids[m.group()])
            pos = m.end()
        if pos < len(text):
            out += self._piece(text[pos:])
        return out

    def _piece(self, piece: str) -> list[int]:
        if len(piece) < MIN_CACHED_CHARS:
            return self._encode_piece(piece)
        with self._lock:
            ids = self._cache.get(piece)
            if ids is not None:
                self._cache.move_to_end(piece)
                self.hits += 1
                return ids
        ids = self._encode_piece(piece)
        if len(piece) <= self._max_chars // 4:
            with self._lock:
                if piece not in self._cache:
                    self._cache[piece] = ids
                    self._chars += len(piece)
                    while self._chars > self._max_chars:
                        old, _ = self._cache.popitem(last=False)
                        self._chars -= len(old)
        return ids


def _prepends_only_first(pre: dict) -> bool:
    """Metaspace with ``prepend_scheme: first`` treats the first piece differently."""
    if pre.get("type") == "Metaspace":
        return pre.get("prepend_scheme") == "first"
    if pre.get("type") == "Sequence":
        return any(_prepends_only_first(p) for p in pre.get("pretokenizers", []))
    return False
