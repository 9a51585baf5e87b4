"""An exact memo of rendered chat prompts: the same conversation is not templated twice.

A render tier sees the same conversation more than once: the router renders a request to
score prefix-cache hits and the engine's render of it follows, clients retry, ``/tokenize``
counts a prompt that is then rendered. The chat template is a pure function of its inputs
(messages, tools, template kwargs, documents) unless it reads the clock (``strftime_now``) or
random text (``lipsum``), so the prompt ids of a conversation can be kept, keyed by the exact
JSON of those inputs. Like the segment cache it changes speed, never ids.

Most conversations are rendered once, and for them the key (the JSON of the whole
conversation, then its hash) would cost ~10% of the render for nothing. So a conversation is
memoized from its second render on: a first one only leaves a glance (its length and the ends
of its first and last message), and the key is built when a glance comes back.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tokenbridge.model.lru import BoundedLRU

# Template globals whose value changes between calls with the same inputs.
_IMPURE = ("strftime_now", "lipsum")

_encoder = msgspec.json.Encoder()
_TOKEN_BYTES = 40  # an int object and its tuple slot
# Glances are kept in a fixed 256 KB Bloom filter, three bits a glance (21 bits of its hash
# each), cleared once 1/24 as many glances as bits went in: at most 1/8 of the bits are then
# set, so a conversation never seen looks seen (and pays for a key and an entry that are never
# used) under 0.2% of the time (~0.05% on average), and a repeat is recognised over the last
# ~87k renders. (One bit a glance, a quarter set, made ~9% of never-seen prompts fill the memo.)
_GLANCE_BITS = 1 << 21
_GLANCE_MASK = _GLANCE_BITS - 1
_GLANCES_KEPT = _GLANCE_BITS // 24


class PromptMemo:
    """``inputs JSON -> (prompt chars, prompt ids)``, an LRU bounded by bytes.

    The key is kept whole (no digest), so a hit is an exact match. Ids are kept as a tuple
    (about 40 bytes a token): copying it to a list is ~15x cheaper than unpacking an array.
    """

    def __init__(self, template: str | None, max_bytes: int = 8 * 1024 * 1024) -> None:
        self.enabled = template is not None and max_bytes > 0 and not any(g in template for g in _IMPURE)
        self._entries: BoundedLRU[bytes, tuple[int, tuple[int, ...]]] = BoundedLRU(max_bytes, name="prompt_memo")
        self._glances = bytearray(_GLANCE_BITS // 8)
        self._glanced = 0

    def key(self, inputs: Any) -> bytes | None:
        """The exact key of the template's inputs, or None when they are not memoized: they
        cannot be, or they are rendered for the first time (counted as a miss)."""
        if not self.enabled:
            return None
        glance = _glance(inputs)
        a, b, c = glance & _GLANCE_MASK, (glance >> 21) & _GLANCE_MASK, (glance >> 42) & _GLANCE_MASK
        seen = self._glances
        if not ((seen[a >> 3] >> (a & 7)) & (seen[b >> 3] >> (b & 7)) & (seen[c >> 3] >> (c & 7)) & 1):
            if self._glanced >= _GLANCES_KEPT:
                seen[:] = bytes(len(seen))
                self._glanced = 0
            seen[a >> 3] |= 1 << (a & 7)
            seen[b >> 3] |= 1 << (b & 7)
            seen[c >> 3] |= 1 << (c & 7)
            self._glanced += 1
            self._entries.count_miss()
            return None
        try:
            return _encoder.encode(inputs)
        except (TypeError, ValueError):
            return None

    @property
    def hits(self) -> int:
        """Lookups that found their prompt so far (a render that adds to it was a repeat)."""
        return self._entries.hits

    def get(self, key: bytes) -> tuple[int, list[int]] | None:
        hit = self._entries.get(key)
        return None if hit is None else (hit[0], list(hit[1]))

    def put(self, key: bytes, chars: int, ids: list[int]) -> None:
        self._entries.put_many([(key, (chars, tuple(ids)), len(key) + _TOKEN_BYTES * len(ids))])


def _glance(inputs: Any) -> int:
    """A fingerprint of ``(messages, ...)`` that costs no walk of the conversation: equal inputs
    give equal glances (a collision only costs building a key that then misses)."""
    messages = inputs[0]
    if type(messages) is not list or not messages:
        return hash(type(messages))
    return hash((len(messages), _ends(messages[0]), _ends(messages[-1])))


def _ends(message: Any) -> Any:
    """A message's content, or its length and ends when long (hashing is then bounded)."""
    content = message.get("content") if type(message) is dict else None
    if type(content) is str:
        return content if len(content) <= 256 else (len(content), content[:64], content[-192:])
    return len(content) if type(content) is list else None
