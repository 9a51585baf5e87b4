"""Tokenizer backends with the few operations render and derender need.

``HFTokenizer`` wraps a ``tokenizer.json``; special-token rules follow transformers
(``all_special_ids`` are the named tokens of ``tokenizer_config.json``). It starts on
``tokenizers`` (loads in ~0.3 s) and, once ``fastokens`` has loaded on a background thread and
reproduced ``tokenizers`` on the start-up probes (``model/fast_backend.py``), switches every
operation to it and drops ``tokenizers``: one copy of the vocabulary, encoding 20-100x faster.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec

from tokenbridge.model.segments import SegmentCache

# From this length on, ``tokenizers`` encodes through ``encode_batch_fast``: same ids, but it
# releases the GIL (plain ``encode`` holds it), so a long prompt does not stall the event loop.
GIL_FREE_ENCODE_CHARS = 16 * 1024


def _token_content(tok: Any) -> str | None:
    if isinstance(tok, dict):
        return tok.get("content")
    return tok if isinstance(tok, str) else None


def _bytes_to_unicode() -> dict[str, int]:
    """GPT-2's byte <-> printable-char table, inverted: char -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class _ModelSpec(msgspec.Struct, frozen=True):
    vocab: Any = None


class _TokenizerSpec(msgspec.Struct):
    """The parts of ``tokenizer.json`` read here; msgspec skips the rest (merges) unbuilt."""

    decoder: Any = None
    pre_tokenizer: Any = None
    added_tokens: list[dict] = []
    model: _ModelSpec = _ModelSpec()

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None)
        return default if value is None else value


class HFTokenizer:
    """A ``tokenizer.json`` tokenizer with transformers-compatible special-token handling."""

    kind = "hf"

    def __init__(self, folder: Path, config: dict) -> None:
        from tokenizers import Tokenizer

        self.folder = folder
        # One read, parsed by msgspec: json.loads(self._tok.to_str()) cost ~1 s of start-up.
        # The Rust tokenizer builds without the GIL, so the spec is parsed meanwhile on a thread.
        # It builds on this thread: its memory, freed once fastokens serves, then shares no malloc
        # arena with fastokens' (loaded on a thread), which would keep ~6 MB of it resident.
        raw = (folder / "tokenizer.json").read_bytes()
        with ThreadPoolExecutor(max_workers=1) as pool:
            parsed = pool.submit(msgspec.json.decode, raw, type=_TokenizerSpec)
            self._tok = Tokenizer.from_str(raw.decode("utf-8"))
            spec = parsed.result()
        # Encoding must not pad or truncate behind our back.
        self._tok.no_padding()
        self._tok.no_truncation()
        self.config = config
        self.byte_level = (spec.get("decoder") or {}).get("type") == "ByteLevel"
        decoder = self._tok.decoder
        self._tokens_to_string = decoder.decode if decoder is not None else "".join
        self.added_vocab: dict[str, int] = {
            a["content"]: a["id"] for a in spec.get("added_tokens", [])
        }
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)
        # vLLM bounds prompt text by max_model_len times the longest vocab entry.
        self.max_chars_per_token = _longest_token_chars(spec) or max(
            map(len, self._tok.get_vocab(with_added_tokens=True))
        )
        self.special_tokens: dict[str, str] = {}
        names: list[str] = []
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            c = _token_content(config.get(key))
            if c is not None:
                self.special_tokens[key] = c
                names.append(c)
        for t in config.get("additional_special_tokens") or []:
            c = _token_content(t)
            if c is not None:
                names.append(c)
        extra = config.get("extra_special_tokens") or {}
        for t in extra.values() if isinstance(extra, dict) else extra:
            c = _token_content(t)
            if c is not None:
                names.append(c)
        self.all_special_ids: frozenset[int] = frozenset(
            i for i in (self._tok.token_to_id(n) for n in names) if i is not None
        )
        self.eos_token_id = self.token_to_id(self.special_tokens.get("eos_token", ""))
        self.bos_token_id = self.token_to_id(self.special_tokens.get("bos_token", ""))
        self._char_byte = _bytes_to_unicode() if self.byte_level else None
        # Bounded: a 2k-token answer with top-5 logprobs touches ~10k ids; all of them cost ~20 MB.
        # Piece texts are not cached here: derender's logprob table (``derender/logprobs.py``)
        # keeps each one with its bytes, and a second cache of the same ~10k strings cost ~1 MB.
        self.token_bytes = lru_cache(maxsize=16384)(self._token_bytes)
        self._space_marker = _leading_space_marker(spec)
        self.backend = "tokenizers"
        self._encode_batch_fast = self._tok.encode_batch_fast
        # Whether encoding the text between added tokens piece by piece is exactly what
        # ``tokenizers`` does for this vocabulary: then repeated pieces may come from a cache.
        self.encodes_by_segments = SegmentCache.applies_to(spec.added_tokens, spec.pre_tokenizer)
        self._segments = SegmentCache(spec.added_tokens, self._encode_pieces) if self.encodes_by_segments else None

    def use_backend(self, fast: Any, name: str) -> None:
        """Serve every operation from ``fast`` (checked by ``fast_backend.load``): the
        ``tokenizers`` object and the segment cache in front of it are dropped."""
        self._tok = fast
        self._tokens_to_string = fast.decode_tokens
        self._encode_batch_fast = None
        self._segments = None
        self.backend = name

    # encode / vocab -------------------------------------------------------------------------

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        if not add_special_tokens and self._segments is not None:
            return self._segments.encode(text)
        batch = self._encode_batch_fast
        if batch is not None and len(text) >= GIL_FREE_ENCODE_CHARS:
            return batch([text], add_special_tokens=add_special_tokens)[0].ids
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def _encode_pieces(self, pieces: list[str]) -> list[list[int]]:
        """Pieces without special tokens, in one call (``encode_batch_fast``: same ids, no
        offsets, and the GIL is released while it runs)."""
        return [e.ids for e in self._tok.encode_batch_fast(pieces, add_special_tokens=False)]

    def encode_keep_last(self, text: str, keep: int, add_special_tokens: bool = False) -> list[int]:
        """Encode keeping only the last ``keep`` ids, special tokens included and kept
        (transformers' left-side truncation)."""
        return keep_last(self._tok, text, keep, add_special_tokens)

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token) if token else None

    def id_to_token(self, token_id: int) -> str | None:
        return self._tok.id_to_token(token_id)

    def ids_to_tokens(self, ids: list[int], skip_special_tokens: bool = False) -> list[str]:
        """transformers' ``convert_ids_to_tokens``; unknown ids become ``""``."""
        special = self.all_special_ids if skip_special_tokens else ()
        out = []
        for i in ids:
            if i in special:
                continue
            t = self._tok.id_to_token(i) if 0 <= i < self.vocab_size else None
            out.append(t or "")
        return out

    def tokens_to_string(self, tokens: list[str]) -> str:
        return self._tokens_to_string(tokens)

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        ids = [i for i in ids if 0 <= i < self.vocab_size]
        return self._tok.decode(ids, skip_special_tokens=skip_special_tokens)

    def piece_text(self, token_id: int) -> str | None:
        """One token decoded alone, as logprobs show it (None when not in the vocab).

        SentencePiece's decoder strips a leading space; vLLM restores it from the raw piece.
        """
        raw = self._tok.id_to_token(token_id) if 0 <= token_id < self.vocab_size else None
        if raw is None:
            return None
        text = self._tok.decode([token_id], skip_special_tokens=False)
        marker = self._space_marker
        if marker:
            n = len(raw) - len(raw.lstrip(marker))
            have = len(text) - len(text.lstrip(" "))
            if n > have:
                text = " " * (n - have) + text
        return text

    def _token_bytes(self, token_id: int) -> bytes:
        """Raw bytes of one byte-level token (the fast detokenizer path)."""
        tok = self._tok.id_to_token(token_id) if 0 <= token_id < self.vocab_size else None
        if not tok:
            return b""
        table = self._char_byte
        out = bytearray()
        for ch in tok:
            b = table.get(ch)
            if b is None:
                out += ch.encode("utf-8")
            else:
                out.append(b)
        return bytes(out)


def keep_last(backend: Any, text: str, keep: int, add_special_tokens: bool) -> list[int]:
    """The last ``keep`` ids of ``text`` on a ``tokenizers``-shaped backend, room left for the
    special tokens the post-processor adds."""
    enc = backend.encode(text, add_special_tokens=False)
    n_special = backend.num_special_tokens_to_add(False) if add_special_tokens else 0
    enc.truncate(max(keep - n_special, 0), direction="left")
    return (backend.post_process(enc) if add_special_tokens else enc).ids


def _longest_token_chars(spec: _TokenizerSpec) -> int | None:
    """Length of the longest vocab entry, read from the spec (``get_vocab`` builds a 150k dict)."""
    vocab = spec.model.vocab
    if isinstance(vocab, dict):
        pieces = list(vocab)
    elif isinstance(vocab, list):
        pieces = [v[0] for v in vocab if isinstance(v, list) and v and isinstance(v[0], str)]
    else:
        return None
    pieces += [a["content"] for a in spec.get("added_tokens", [])]
    return max(map(len, pieces), default=None)


def _leading_space_marker(spec: dict) -> str | None:
    pre = spec.get("pre_tokenizer") or {}
    if pre.get("type") == "Metaspace":
        return pre.get("replacement", "\u2581")
    if pre.get("type") == "Sequence":
        for sub in pre.get("pretokenizers", []):
            if sub.get("type") == "Metaspace":
                return sub.get("replacement", "\u2581")
    return None
