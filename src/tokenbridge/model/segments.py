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
from array import array
from typing import Callable, Sequence

from tokenbridge.model.lru import BoundedLRU


class SegmentCache:
    """Encodes text piece by piece between added tokens, with an LRU of pieces (by chars).

    The pieces a prompt misses are encoded together in one batch call: a chat has many short
    pieces (role headers, short turns), and one call each would cost more than the encoding.
    """

    def __init__(
        self,
        added_tokens: list[dict],
        encode_pieces: Callable[[list[str]], list[list[int]]],
        max_chars: int = 2 * 1024 * 1024,
        max_pieces: int = 65536,
    ) -> None:
        self._ids = {a["content"]: a["id"] for a in added_tokens if not a.get("normalized")}
        literals = sorted(self._ids, key=len, reverse=True)
        self._split = re.compile("|".join(map(re.escape, literals))) if literals else None
        self._encode_pieces = encode_pieces
        # Ids are kept as 4-byte arrays: a list of int objects would cost ~9x the memory.
        self._cache: BoundedLRU[str, array] = BoundedLRU(max_chars, max_pieces, name="segments")

    @staticmethod
    def applies_to(spec_added_tokens: list[dict], pre_tokenizer: dict | None) -> bool:
        """Whether piecewise encoding is exactly what ``tokenizers`` does for this vocabulary."""
        if any(a.get("lstrip") or a.get("rstrip") or a.get("single_word") for a in spec_added_tokens):
            return False
        return not _prepends_only_first(pre_tokenizer or {})

    def encode(self, text: str) -> list[int]:
        # The prompt as pieces of text (str) and added-token ids (int), in order.
        parts: list[str | int] = []
        pos = 0
        if self._split is not None:
            for m in self._split.finditer(text):
                if m.start() > pos:
                    parts.append(text[pos : m.start()])
                parts.append(self._ids[m.group()])
                pos = m.end()
        if pos < len(text) or not parts:
            parts.append(text[pos:])
        found = self._lookup([p for p in parts if type(p) is str])
        out: list[int] = []
        for p in parts:
            if type(p) is str:
                out += found[p]
            else:
                out.append(p)
        return out

    def _lookup(self, pieces: list[str]) -> dict[str, Sequence[int]]:
        found: dict[str, Sequence[int]] = self._cache.get_many(pieces)
        missing = [p for p in dict.fromkeys(pieces) if p not in found]
        if not missing:
            return found
        encoded = self._encode_pieces(missing)
        found.update(zip(missing, encoded))
        self._cache.put_many((piece, array("I", ids), len(piece)) for piece, ids in zip(missing, encoded))
        return found


def _prepends_only_first(pre: dict) -> bool:
    """Metaspace with ``prepend_scheme: first`` treats the first piece differently."""
    if pre.get("type") == "Metaspace":
        return pre.get("prepend_scheme") == "first"
    if pre.get("type") == "Sequence":
        return any(_prepends_only_first(p) for p in pre.get("pretokenizers", []))
    return False
