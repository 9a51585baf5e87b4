"""Engine logprobs (token ids) -> OpenAI logprobs (token strings and bytes).

A token whose text alone is an incomplete UTF-8 sequence is re-decoded with up to four
preceding sampled ids as context, as vLLM does; streaming carries those ids in its state.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

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


@lru_cache(maxsize=65536)
def _piece(tok: Any, token_id: int) -> tuple[str, tuple[int, ...] | None] | None:
    """A token's logprob string and bytes when they need no context (None when they do)."""
    text = tok.piece_text(token_id)
    if text is None:
        return "", None
    if text.endswith(_REPL):
        return None
    return text, tuple(text.encode("utf-8", errors="replace"))


def _token(tok: Any, token_id: int, context: list[int]) -> tuple[str, tuple[int, ...] | None]:
    piece = _piece(tok, token_id)
    if piece is not None:
        return piece
    text = _corrected(tok, token_id, context)
    return text, tuple(text.encode("utf-8", errors="replace"))


def chat_logprobs(
    tok: Any, lp: GenerateLogprobs, top_limit: int | None, context: list[int]
) -> tuple[dict, list[int]]:
    """The chat ``logprobs`` object and the updated context window."""
    if lp.content is None:
        return {"content": None}, context
    ctx = list(context)
    out = []
    for entry in lp.content:
        tops = entry.top_logprobs if top_limit is None else entry.top_logprobs[:top_limit]
        s, b = _token(tok, entry.token_id, ctx)
        top = []
        for t in tops:
            ts, tb = _token(tok, t.token_id, ctx)
            top.append({"token": ts, "logprob": t.logprob, "bytes": tb})
        out.append({"token": s, "logprob": entry.logprob, "bytes": b, "top_logprobs": top})
        ctx.append(entry.token_id)
    return {"content": out}, ctx[-CONTEXT_WINDOW:]


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
        tokens.append(entry["token"])
        token_logprobs.append(entry["logprob"])
        tops.append({t["token"]: t["logprob"] for t in entry["top_logprobs"]} if source.top_logprobs else None)
        offset += len(entry["token"])
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
