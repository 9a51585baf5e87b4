"""Finding markers in streamed text: the one place that knows a marker may be split across chunks.

Every family's parser cuts its text at literal markers. A chunk may end inside a marker, so the
possible partial marker at the end is held back for the next chunk (``partial_suffix``); markers
that are special tokens are also looked up by id (``token_id``), and the tokenizer's other special
tokens are listed for the families whose vLLM parser drops them (``special_token_texts``).
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Iterable


def partial_suffix(text: str, markers: Iterable[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some marker.

    That many trailing characters must be held back: the next chunk may complete a marker.
    """
    best = 0
    size = len(text)
    for m in markers:
        n = min(len(m) - 1, size)
        if n <= best:
            continue
        # Only a place holding the marker's first character can start such a suffix.
        j = text.find(m[0], size - n)
        while j != -1 and size - j > best:
            if m.startswith(text[j:]):
                best = size - j
                break
            j = text.find(m[0], j + 1)
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


def lex(text: str, markers: tuple[str, ...], drops: list[str]) -> list[tuple[bool, str]]:
    """``(is_marker, text)`` pieces; at each position the longest literal wins, drops vanish."""
    lits = sorted({*markers, *drops}, key=len, reverse=True)
    firsts = {lit[0] for lit in lits}
    marker_set = set(markers)
    pieces: list[tuple[bool, str]] = []
    plain_start = i = 0
    n = len(text)
    while i < n:
        if text[i] in firsts:
            hit = next((lit for lit in lits if text.startswith(lit, i)), None)
            if hit is not None:
                if i > plain_start:
                    pieces.append((False, text[plain_start:i]))
                if hit in marker_set:
                    pieces.append((True, hit))
                i += len(hit)
                plain_start = i
                continue
        i += 1
    if plain_start < n:
        pieces.append((False, text[plain_start:]))
    return pieces


def token_id(vocab: Any, text: str) -> int | None:
    if vocab is None:
        return None
    try:
        return vocab.token_to_id(text)
    except Exception:
        return None


def is_marker_prefix(text: str, markers: Iterable[str]) -> bool:
    """Whether ``text`` is a proper prefix of one of ``markers``."""
    return any(len(m) > len(text) and m.startswith(text) for m in markers)


def truncated_marker_start(text: str, prefix: str, markers: tuple[str, ...]) -> int:
    """Where a possibly truncated marker (all start with ``prefix``) begins at the end of ``text``."""
    i = text.rfind(prefix)
    if i >= 0 and is_marker_prefix(text[i:], markers):
        return i
    for k in range(min(len(prefix) - 1, len(text)), 0, -1):
        if prefix.startswith(text[-k:]):
            return len(text) - k
    return len(text)


def cut_truncated_marker(text: str, prefix: str | None, markers: tuple[str, ...], vocab: Any) -> str:
    """``text`` without a trailing truncated marker; vLLM compares token ids, so with a
    tokenizer the cut needs the piece's ids to be a proper prefix of a marker's."""
    i = text.rfind(prefix) if prefix else -1
    if i < 0 or not is_marker_prefix(text[i:], markers):
        return text
    encode = getattr(vocab, "encode", None)
    if encode is not None:
        ids = list(encode(text[i:]))
        if not any(
            len(full) > len(ids) and full[: len(ids)] == ids for full in (list(encode(m)) for m in markers)
        ):
            return text
    return text[:i]
