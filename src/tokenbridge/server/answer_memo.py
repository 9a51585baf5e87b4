"""An exact memo of whole chat render answers: a body seen before is answered without a render.

The same chat body often comes three times or more (a router's render, then the engine's;
retries; a client that sends one prompt over and over). The prompt memo already skips the
template and the tokenizer for it, but a short render's cost is then the rest: JSON decode,
vLLM's request checks, sampling assembly and the answer's encode (~3/4 of a 100-token render).
So when the answer is a pure function of the body, its bytes are kept, keyed by the exact body.

The one per-request part of such an answer is its random request id (``chatcmpl-<16 hex>``),
which must differ per request as vLLM's does. An answer is kept as the byte pieces around the
id it was rendered with, and only when the id occurs exactly once (in ``request_id``, the
first field): a hit joins the pieces with a fresh id of the same length and alphabet, so it is
byte for byte the answer a render with that id gives. The handler says when an answer may be
kept (the id is random, nothing but the body decides the rest, and the prompt memo found the
conversation: a repeat; ``handlers.chat_render``); errors never are.

Most bodies come once, and each Python step on their path costs ~1-2k instructions (hashing a
6 KB body, ~18k), so a body is hashed only when an answer of its length is kept; a body of the
same length only costs that hash. The memo is an LRU bounded in bytes.
"""

from __future__ import annotations

from tokenbridge.model.lru import BoundedLRU

# Bodies up to this size are looked up: past it the render dwarfs what a hit would save.
MAX_BODY_BYTES = 64 * 1024
_MAX_LENGTHS = 4096  # body lengths remembered before the set starts over
_ENTRY_OVERHEAD = 200


class Answer:
    """A kept answer: ``pieces`` joined by the request's id, and the prompt tokens it renders."""

    __slots__ = ("pieces", "tokens")

    def __init__(self, pieces: list[bytes], tokens: int) -> None:
        self.pieces = pieces
        self.tokens = tokens

    def with_id(self, rid: str) -> bytes:
        return rid.encode().join(self.pieces)


class AnswerMemo:
    """``(route, body) -> Answer``, at most ``max_bytes`` held; ``lengths`` holds the lengths of
    the bodies kept (a superset: evicted ones stay until it starts over)."""

    def __init__(self, max_bytes: int = 4 * 1024 * 1024) -> None:
        self.enabled = max_bytes > 0
        self.lengths: set[int] = set()
        self._entries: BoundedLRU[tuple[str, bytes], Answer] = BoundedLRU(max_bytes, name="answer_memo")

    def get(self, path: str, body: bytes) -> Answer | None:
        return self._entries.get((path, body))

    def offer(self, path: str, body: bytes, payload: bytes, rid: str, tokens: int) -> None:
        """Keep ``payload``, rendered for ``body`` with the random id ``rid``, if the id occurs
        once in it."""
        if not self.enabled or len(body) > MAX_BODY_BYTES:
            return
        pieces = payload.split(rid.encode())
        if len(pieces) != 2:
            return
        self._entries.put_many([((path, body), Answer(pieces, tokens), len(body) + len(payload) + _ENTRY_OVERHEAD)])
        if len(self.lengths) >= _MAX_LENGTHS:
            self.lengths.clear()
        self.lengths.add(len(body))
