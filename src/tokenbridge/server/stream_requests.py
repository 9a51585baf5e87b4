"""The fields every chunk of a derender stream repeats, decoded and checked once.

A streamed derender chunk carries a few new token ids beside its stream's whole request
(``chat_request`` or ``completion_request``) and, for chat, the prompt's ids. For an 8k-token
conversation, decoding those two and checking them (vLLM's request checks; every prompt id a
``TokenId`` within the vocabulary) took ~0.3 ms of the chunk's ~0.5 ms. All of that
depends on the fields' bytes and the server alone, so what an earlier chunk made of the same
bytes is taken as it was: one request struct and one id list, shared by the stream's chunks,
which derender only reads.

One-shot bodies are not kept: their request is seldom sent twice. A chunk of a short
conversation saves less (~9 us of ~57), but streams are mostly short conversations.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tokenbridge.model.lru import BoundedLRU

# The fields each derender body's stream repeats, by its route's request field.
REPEATED = {"chat_request": ("chat_request", "prompt_token_ids"), "completion_request": ("completion_request",)}


class KnownChunk(NamedTuple):
    """A streamed chunk's repeated fields: their names and bytes (``null`` for an absent one),
    and what those bytes made, when it is kept (else None)."""

    names: tuple[str, ...]
    raw: tuple[bytes, ...]
    values: tuple[Any, ...] | None

    @property
    def kept(self) -> bool:
        return self.values is not None


class StreamRequests:
    """What repeated fields made, by server and exact bytes; bounded by an estimate of memory."""

    # ~50 streams of 8k-token conversations. Past that, streams taking turns miss: a miss costs
    # ~6% more than decoding the chunk whole (the raw fields are read twice, and hashed).
    MAX_BYTES = 32 << 20
    MAX_ENTRIES = 1024
    # Memory of the decoded fields per byte of their JSON (measured: 5-7, a prompt id's int and
    # list slot taking 36 bytes for its ~6 characters).
    ENTRY_BYTES_PER_RAW_BYTE = 8

    def __init__(self) -> None:
        self._kept: BoundedLRU[tuple, tuple[Any, Any, tuple]] = BoundedLRU(
            self.MAX_BYTES, self.MAX_ENTRIES, name="stream_requests"
        )

    def look_up(self, obj: dict[str, Any], request_field: str, model: Any, cfg: Any) -> KnownChunk | None:
        """The repeated fields of a body (``lax.decode_view`` leaves them ``msgspec.Raw``) when
        it is a streamed chunk (``"stream": true``) whose request is an object; else None."""
        if obj.get("stream") is not True or request_field not in obj:
            return None
        names = REPEATED[request_field]  # the request first
        raw = tuple(bytes(obj[n]) if n in obj else b"null" for n in names)
        if not raw[0].startswith(b"{"):
            return None
        kept = self._kept.get((id(model), id(cfg), raw))
        if kept is None or kept[0] is not model or kept[1] is not cfg:
            return KnownChunk(names, raw, None)
        return KnownChunk(names, raw, kept[2])

    def put(self, known: KnownChunk, model: Any, cfg: Any, values: tuple) -> None:
        """Keep ``values``: what ``known``'s repeated fields made once the chunk was answered."""
        size = self.ENTRY_BYTES_PER_RAW_BYTE * sum(map(len, known.raw))
        self._kept.put_many([((id(model), id(cfg), known.raw), (model, cfg, values), size)])


stream_requests = StreamRequests()
