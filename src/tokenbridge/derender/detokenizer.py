"""Incremental detokenization, identical for one-shot and streamed derender.

It reproduces vLLM's engine detokenizer (prefix/read offsets over token strings, seeded with
the prompt tail so SentencePiece keeps the first leading space, text ending in an incomplete
UTF-8 sequence held back). Byte-level BPE vocabularies take an exact shortcut: the text is the
UTF-8 of the tokens' bytes, so only the undecodable tail needs carrying. Either way the state is
a few tokens or bytes, never the output so far.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from tokenbridge.derender.per_tokenizer import PerTokenizer

# vLLM seeds its window with the last 5 (+2) prompt tokens.
_SEED_OFFSET = 5
_REPLACEMENT = "\ufffd"


class _TokenBytes:
    """Token id -> its bytes, for one tokenizer. Read with one ``itemgetter`` call per feed
    from a plain dict (a subclass's lookups go through a Python-level slot), a lookup costs a
    fifth of a call to the tokenizer's ``lru_cache``. Bounded: emptied once it would pass
    ``CAP`` ids; it holds the same bytes objects as the tokenizer's cache."""

    CAP = 16384
    __slots__ = ("tok", "table")

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.table: dict[int, bytes] = {}

    def pieces(self, token_ids: list[int]) -> tuple[bytes, ...]:
        table = self.table
        if len(token_ids) > 1:
            try:
                return itemgetter(*token_ids)(table)
            except KeyError:
                pass
        if len(table) + len(token_ids) > self.CAP:
            table.clear()
        tb, out = self.tok.token_bytes, []
        for t in token_ids:
            b = table.get(t)
            if b is None:
                b = table[t] = tb(t)
            out.append(b)
        return tuple(out)


_token_bytes = PerTokenizer(_TokenBytes)


class Detokenizer:
    __slots__ = ("tok", "skip_special", "byte_level", "pending", "tokens", "prefix", "read")

    def __init__(self, tokenizer: Any, skip_special_tokens: bool) -> None:
        self.tok = tokenizer
        self.skip_special = skip_special_tokens
        self.byte_level = getattr(tokenizer, "byte_level", False)
        self.pending = b""
        self.tokens: list[str] = []
        self.prefix = 0
        self.read = 0

    def seed(self, prompt_token_ids: list[int] | None) -> "Detokenizer":
        """Prime the window with the prompt tail, as vLLM does before the first output."""
        if prompt_token_ids and not self.byte_level:
            toks = self.tok.ids_to_tokens(
                prompt_token_ids[-_SEED_OFFSET - 2 :], skip_special_tokens=self.skip_special
            )
            self.tokens = toks
            self.read = len(toks)
            self.prefix = max(self.read - _SEED_OFFSET, 0)
        return self

    def feed(self, token_ids: list[int]) -> str:
        if self.byte_level:
            return self._feed_bytes(token_ids)
        return "".join([self._feed_one(t) for t in token_ids])

    def _feed_bytes(self, token_ids: list[int]) -> str:
        if self.skip_special:
            special = self.tok.all_special_ids
            token_ids = [t for t in token_ids if t not in special]
        pieces = _token_bytes(self.tok).pieces(token_ids)
        buf = self.pending + b"".join(pieces)
        if not buf:
            return ""
        text = buf.decode("utf-8", errors="replace")
        if not text.endswith(_REPLACEMENT):
            self.pending = b""
            return text
        # vLLM decides token by token: text is emitted at the last token boundary where
        # everything pending decodes cleanly; what follows waits for more bytes.
        end = len(buf)
        for piece in reversed(pieces):
            end -= len(piece)
            if end <= len(self.pending):
                break
            head = buf[:end].decode("utf-8", errors="replace")
            if not head.endswith(_REPLACEMENT):
                self.pending = buf[end:]
                return head
        self.pending = buf
        return ""

    def _feed_one(self, token_id: int) -> str:
        new = self.tok.ids_to_tokens([token_id], skip_special_tokens=self.skip_special)
        toks = self.tokens + new
        prefix_text = self.tok.tokens_to_string(toks[self.prefix : self.read])
        new_text = self.tok.tokens_to_string(toks[self.prefix :])
        if len(new_text) <= len(prefix_text) or new_text.endswith(_REPLACEMENT):
            self.tokens = toks
            return ""
        out = new_text[len(prefix_text) :]
        # Everything before the old read offset is dead: keep the window small.
        self.tokens = toks[self.read :]
        self.prefix = 0
        self.read = len(self.tokens)
        return out

    # state ----------------------------------------------------------------------------------

    def snapshot(self) -> list:
        if self.byte_level:
            return [self.pending]
        return [self.tokens[self.prefix :], self.read - self.prefix]

    def resume(self, prev_tokens: list[str], prefix_offset: int, read_offset: int) -> "Detokenizer":
        """Continue from vLLM's window: token strings and its prefix/read offsets."""
        if not prefix_offset <= read_offset <= len(prev_tokens):
            raise ValueError("inconsistent detokenizer offsets")
        if self.byte_level:
            # What vLLM has not emitted yet is the tokens after its read offset.
            self.pending = b"".join([self._string_bytes(t) for t in prev_tokens[read_offset:]])
        else:
            self.tokens = prev_tokens[prefix_offset:]
            self.prefix, self.read = 0, read_offset - prefix_offset
        return self

    def _string_bytes(self, token: str) -> bytes:
        token_id = self.tok.token_to_id(token)
        return self.tok.token_bytes(token_id) if token_id is not None else token.encode("utf-8")

    def restore(self, snap: list) -> "Detokenizer":
        if self.byte_level:
            if len(snap) != 1 or not isinstance(snap[0], bytes) or len(snap[0]) > 4096:
                raise ValueError("bad detokenizer state")
            self.pending = snap[0]
        else:
            if (
                len(snap) != 2
                or not isinstance(snap[0], list)
                or len(snap[0]) > 64
                or not all(isinstance(t, str) for t in snap[0])
                or not isinstance(snap[1], int)
                or not 0 <= snap[1] <= len(snap[0])
            ):
                raise ValueError("bad detokenizer state")
            self.tokens, self.prefix, self.read = snap[0], 0, snap[1]
        return self

