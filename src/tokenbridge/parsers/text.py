"""Small text helpers every family uses: markers split across chunks, the tokenizer's special
tokens, and vLLM's argument serialization."""

from __future__ import annotations

import json
from typing import Any, Callable, Collection, Iterable


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


def scan_markers(
    buf: str, markers: Collection[str], on_text: Callable[[str], None], on_marker: Callable[[str], None]
) -> str:
    """Hands ``buf`` on as text runs and markers, in order; returns the held-back tail.

    The tail is a possible partial marker, to be put before the next chunk.
    """
    while True:
        pos, marker = find_first(buf, markers)
        if marker is None:
            break
        on_text(buf[:pos])
        on_marker(marker)
        buf = buf[pos + len(marker):]
    keep = partial_suffix(buf, markers)
    on_text(buf[: len(buf) - keep])
    return buf[len(buf) - keep:]


def dumps_args(value) -> str:
    """Arguments re-serialized the way vLLM's parsers do: ``json.dumps(..., ensure_ascii=False)``."""
    return json.dumps(value, ensure_ascii=False)


def special_token_texts(vocab: Any, exclude: Collection[str] = ()) -> list[str]:
    """Texts of the tokenizer's named special tokens (transformers' ``all_special_tokens``) in
    id order, less ``exclude``: vLLM's engine drops those that are no marker of the family."""
    ids = getattr(vocab, "all_special_ids", None) if vocab is not None else None
    out = []
    for i in sorted(ids or ()):
        text = vocab.id_to_token(i)
        if text and text not in exclude:
            out.append(text)
    return out
