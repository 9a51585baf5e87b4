"""The fastest exact tokenizer backend, chosen per tokenizer at start-up.

``fastokens`` encodes 20-100x faster than ``tokenizers`` (``bench/encoders.py``: 1.2k tokens in
~11 us against ~1 ms) and also decodes, so once it reproduces ``tokenizers`` on the probes
below it serves every operation and ``tokenizers`` is dropped: one vocabulary in memory.
``gigatoken`` was measured too: exact on the corpus but ~2x slower than fastokens, and its
pretoken cache grows without bound on new words, so it is not used. A tokenizer that
fastokens cannot reproduce stays on ``tokenizers``. The probes are a start-up gate; the proof
is the test suite (every corpus text and generated text on every model, ``tests/model``).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from pathlib import Path
from typing import Any

from tokenbridge.model.tokenizer import keep_last

# Text shapes where BPE pre-tokenizers differ most: contractions, digit runs, whitespace runs,
# scripts without spaces, emoji with modifiers and ZWJ, combining marks, long words.
PROBES = (
    "Hello, world! It's 2024-05-01 and 3.14159 > 3.",
    "  leading spaces\n\n\ttabs\r\nand  trailing   ",
    "Ünïcödé façade, 日本語のテキスト, emoji 🙂👍🏽, العربية",
    'def f(x):\n    return {"a": [1, 2, 3]}  # comment\n',
    "I'm you're they've we'll he'd IT'S ...!!!",
    "1234567890 12 345 6789012345678901234567890 ١٢٣ ½",
    "\n\n\n    \t \u00a0\u3000x\u2028y\u200b z   \n",
    "中文句子，没有空格。한국어 문장입니다. ภาษาไทย",
    "👩\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 🇫🇷 1️⃣ ❤️",
    "e\u0301 a\u0300\u0323 \u1e9b\u0323 ｆｕｌｌｗｉｄｔｈ ﬁ",
    "\x00\x01\x7f\ufffd\ufeff\U0010ffff \x1b[0m\\x89\\xff",
    "Pneumonoultramicroscopicsilicovolcanoconiosis" * 8 + " " + "x" * 700,
)


# Text and ids of repeated segments; an 8k-token conversation with a new last turn holds ~90 KB.
SEGMENT_CACHE_BYTES = 4 * 1024 * 1024


def load(tok: Any) -> str:
    """Switch ``tok`` (an ``HFTokenizer``) to fastokens when it agrees; returns the backend in
    use and, when it is not fastokens, why."""
    # One BPE thread: a worker is one core, and a thread pool would not survive the fork of
    # ``--workers N`` (the children would wait on threads that exist only in the parent).
    os.environ.setdefault("FASTOKENS_BPE_THREADS", "1")
    try:
        import fastokens

        fast = fastokens.Tokenizer.from_file(str(tok.folder / "tokenizer.json"))
        fast.no_padding()
        fast.no_truncation()
        if tok.encodes_by_segments:
            # Its own cache of the segments between added tokens (system prompt, tools, earlier
            # turns): the ids are those of encoding without it, the probes run through it.
            fast.enable_segment_cache(SEGMENT_CACHE_BYTES)
        mismatch = _first_mismatch(tok, fast)
    except Exception as e:  # not installed, or this tokenizer.json is not supported
        return f"tokenizers (fastokens unavailable: {type(e).__name__}: {e})"
    finally:
        release_freed_memory()
    if mismatch:
        return f"tokenizers (fastokens differs on {mismatch})"
    tok.use_backend(fast, "fastokens")
    del fast
    release_freed_memory()
    return f"fastokens {_version(fastokens)}"


def _first_mismatch(tok: Any, fast: Any) -> str | None:
    ref = tok._tok
    if fast.vocab_size != ref.get_vocab_size(with_added_tokens=True):
        return "vocab_size"
    if fast.num_special_tokens_to_add(False) != ref.num_special_tokens_to_add(False):
        return "num_special_tokens_to_add"
    added = list(tok.added_vocab)
    texts = [*PROBES, " ".join(added), "".join(added), "\n".join(f"{a} x{a}y {a}" for a in added[:64])]
    for text in texts:
        for special in (False, True):
            ids = ref.encode(text, add_special_tokens=special).ids
            for _ in range(2):  # the second time from its segment cache
                if fast.encode(text, add_special_tokens=special).ids != ids:
                    return f"encode({text[:40]!r}, add_special_tokens={special})"
            for skip in (False, True):
                if fast.decode(ids, skip_special_tokens=skip) != ref.decode(ids, skip_special_tokens=skip):
                    return f"decode of {text[:40]!r}"
            tokens = [ref.id_to_token(i) for i in ids]
            if fast.decode_tokens(tokens) != tok.tokens_to_string(tokens):
                return f"decode_tokens of {text[:40]!r}"
            for keep in (1, 7, len(ids) // 2):
                if keep_last(fast, text, keep, special) != keep_last(ref, text, keep, special):
                    return f"truncation of {text[:40]!r}"
    for i in range(fast.vocab_size):
        if fast.id_to_token(i) != ref.id_to_token(i):
            return f"id_to_token({i})"
    for a in added:
        if fast.token_to_id(a) != ref.token_to_id(a):
            return f"token_to_id({a!r})"
    return None


def _version(module: Any) -> str:
    """The installed version, from the name of its ``.dist-info`` folder: ``importlib.metadata``
    would import email, csv and zipfile (~2 MB resident) for this one string."""
    name = module.__name__
    for info in Path(module.__file__).parent.parent.glob(f"{name}-*.dist-info"):
        return info.name[len(name) + 1 : -len(".dist-info")]
    from importlib.metadata import version

    return version(name)


def release_freed_memory() -> None:
    """Return freed heap pages to the OS (glibc keeps the tokenizer.json parse garbage, ~30 MB)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


_MADV_DONTNEED = 4
# Shared libraries serving with fastokens runs little or none of: the C++ runtime (only
# ``tokenizers`` links it), and OpenSSL unless TLS serves.
TOKENIZERS_ONLY_LIBRARIES = ("libstdc++.so",)
TLS_LIBRARIES = ("libcrypto.so", "libssl.so")


def release_code_pages(package: str, libraries: tuple[str, ...] = ()) -> int:
    """Drop this process's resident pages of ``package``'s native extension code, and of the
    shared ``libraries`` (file name prefixes), none of which is run again, or only a few pages
    of it, once fastokens serves: ``tokenizers`` (~5.5 MB of its ~6 MB), the C++ runtime only
    it links (~1.4 MB), OpenSSL when no TLS serves (~3.5 MB, of which the stream state's HMAC
    faults back a few pages). Returns the KB released. Only mappings nothing was ever written
    to (no dirty or anonymous page) are released: their pages are the file's own, read back
    from the page cache if the code runs."""
    paths = {
        m.__file__
        for name, m in list(sys.modules.items())
        if name.split(".")[0] == package and str(getattr(m, "__file__", "")).endswith(".so")
    }
    try:
        madvise = ctypes.CDLL(None).madvise
        text = Path("/proc/self/smaps").read_text()
    except (OSError, AttributeError):
        return 0

    def wanted(path: str) -> bool:
        return path in paths or path.rpartition("/")[2].startswith(libraries)

    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    released = 0
    for start, end, rss in _clean_mappings(text, wanted):
        if madvise(start, end - start, _MADV_DONTNEED) == 0:
            released += rss
    return released


def _clean_mappings(smaps: str, wanted):
    """(start, end, resident KB) of the read-only, never-written mappings of the files
    ``wanted(path)`` is true of."""
    span = None
    fields: dict[str, int] = {}
    for line in smaps.splitlines() + [""]:
        head = line.split(maxsplit=5)
        if not head or "-" in head[0]:  # the next mapping starts (or the text ends)
            if span is not None and not fields.get("Private_Dirty:") and not fields.get("Anonymous:"):
                yield span[0], span[1], fields.get("Rss:", 0)
            span, fields = None, {}
            if len(head) == 6 and "w" not in head[1] and wanted(head[5]):
                lo, hi = head[0].split("-")
                span = (int(lo, 16), int(hi, 16))
        elif len(head) >= 2 and head[0].endswith(":") and head[1].isdigit():
            fields[head[0]] = int(head[1])
