"""Engine logprobs (token ids) -> OpenAI logprobs (token strings and bytes).

A token whose text alone is an incomplete UTF-8 sequence is re-decoded with up to four
preceding sampled ids as context, as vLLM does; streaming carries those ids in its state.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tokenbridge.derender.per_tokenizer import PerTokenizer
from tokenbridge.protocol.engine import GenerateLogprobs

CONTEXT_WINDOW = 4
_REPL = "\ufffd"


def _corrected(tok: Any, token_id: int, context: list[int]) -> str:
    for n in range(1, min(len(context), CONTEXT_WINDOW) + 1):
        ctx = context[-n:]
        full = tok.decode(ctx + [token_id])
        if full.endswith(_REPL):
            continue
        clean_end = len(ctx)
        for j in range(len(ctx) - 1, -1, -1):
            if tok.decode([ctx[j]]).endswith(_REPL):
                clean_end = j
            else:
                break
        prefix = tok.decode(ctx[:clean_end]) if clean_end > 0 else ""
        if full.startswith(prefix):
            return full[len(prefix) :]
        common = 0
        for a, b in zip(prefix, full):
            if a != b:
                break
            common += 1
        return full[common:]
    return ""


#: The table's value for a token whose logprob string needs the preceding ids (its text alone
#: ends mid-character); compared by identity.
_NEEDS_CONTEXT = (None, None)


class _Pieces:
    """Token id -> its logprob string and UTF-8 bytes when they need no context, for one
    tokenizer. A plain dict: a third of an ``lru_cache`` entry's memory, and cheaper to read
    than a call. Bounded: emptied once it holds ``CAP`` ids (a 2k-token answer with top-5
    logprobs touches ~10k); the bytes stay the JSON array the answer writes (``_with_bytes``)."""

    CAP = 16384
    __slots__ = ("tok", "table")

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.table: dict[int, tuple[str, msgspec.Raw | None]] = {}

    def fill(self, token_id: int) -> tuple[str, msgspec.Raw | None]:
        table = self.table
        if len(table) >= self.CAP:
            table.clear()
        text = self.tok.piece_text(token_id)
        if text is None:
            piece = "", None
        elif text.endswith(_REPL):
            piece = _NEEDS_CONTEXT
        else:
            piece = _with_bytes(text)
        table[token_id] = piece
        return piece


_pieces = PerTokenizer(_Pieces)


class LogprobToken(msgspec.Struct, gc=False):
    """One ``logprobs.content`` entry, or one of its ``top_logprobs`` (which leave that field
    unset, so it is not written). A struct, not a dict: a 2k-token answer with top-5 holds
    12k of them, at a third of a dict's memory, and no cycle can go through one."""

    token: str
    logprob: float
    bytes: msgspec.Raw | None  # the JSON array of the token's UTF-8 bytes
    top_logprobs: list["LogprobToken"] | msgspec.UnsetType = msgspec.UNSET


def chat_logprobs(
    tok: Any, lp: GenerateLogprobs, top_limit: int | None, context: list[int]
) -> tuple[dict, list[int]]:
    """The chat ``logprobs`` object and the updated context window."""
    if lp.content is None:
        return {"content": None}, context
    pieces = _pieces(tok)
    get, fill = pieces.table.get, pieces.fill
    ctx = list(context)
    out = []
    for entry in lp.content:
        token_id = entry.token_id
        piece = get(token_id) or fill(token_id)
        if piece is _NEEDS_CONTEXT:
            piece = _in_context(tok, token_id, ctx)
        tops = entry.top_logprobs
        if top_limit is not None and len(tops) > top_limit:
            tops = tops[:top_limit]
        alternatives = []
        for t in tops:
            top = get(t.token_id) or fill(t.token_id)
            if top is _NEEDS_CONTEXT:
                top = _in_context(tok, t.token_id, ctx)
            alternatives.append(LogprobToken(top[0], t.logprob, top[1]))
        out.append(LogprobToken(piece[0], entry.logprob, piece[1], alternatives))
        ctx.append(token_id)
    return {"content": out}, ctx[-CONTEXT_WINDOW:]


def _in_context(tok: Any, token_id: int, context: list[int]) -> tuple[str, msgspec.Raw]:
    """The logprob string and bytes of a token whose text alone ends mid-character."""
    return _with_bytes(_corrected(tok, token_id, context))


def _with_bytes(text: str) -> tuple[str, msgspec.Raw]:
    """A logprob string and its UTF-8 bytes, as the JSON array the answer writes: made once per
    token, it is copied into each answer rather than encoded int by int (a 2k-token answer with
    top-5 logprobs writes 12k of them, ~9% of its time as a tuple)."""
    return text, msgspec.Raw(_encode(list(text.encode("utf-8", errors="replace"))))


_encode = msgspec.json.Encoder().encode


def completion_logprobs(
    tok: Any, lp: GenerateLogprobs, top_limit: int | None, context: list[int], offset: int
) -> tuple[dict, list[int], int]:
    """The legacy completions shape; returns it, the context window and the next text offset."""
    chat, ctx = chat_logprobs(tok, lp, top_limit, context)
    if chat["content"] is None:
        return {"text_offset": None, "token_logprobs": None, "tokens": None, "top_logprobs": None}, ctx, offset
    text_offset, token_logprobs, tokens, tops = [], [], [], []
    for entry, source in zip(chat["content"], lp.content or ()):
        text_offset.append(offset)
        tokens.append(entry.token)
        token_logprobs.append(entry.logprob)
        tops.append({t.token: t.logprob for t in entry.top_logprobs} if source.top_logprobs else None)
        offset += len(entry.token)
    return {"text_offset": text_offset, "token_logprobs": token_logprobs, "tokens": tokens, "top_logprobs": tops}, ctx, offset


def chat_top_limit(req: Any) -> int | None:
    if req is None or not req.logprobs:
        return None
    if req.logprob_token_ids or req.top_logprobs == -1:
        return None
    return req.top_logprobs or 0


def completion_top_limit(req: Any) -> int | None:
    if req is None or req.logprobs is None or req.logprobs == -1 or req.logprob_token_ids:
        return None
    return max(req.logprobs + 1, 0)
