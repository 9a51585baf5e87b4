"""The fast backend changes no answer: on every tokenizer in ``shared/models`` it passes the
start-up checks, and then encodes, truncates and decodes exactly as ``tokenizers`` does, on
every corpus text and on generated text (added and special tokens, whitespace runs, digits,
CJK, emoji and ZWJ sequences, combining marks, control and odd characters, very long words)."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from conftest import MODELS, PARITY, PROFILES
from tokenbridge.model import fast_backend
from tokenbridge.model.tokenizer import HFTokenizer

FOLDERS = sorted(p.parent.name for p in MODELS.glob("*/tokenizer.json"))


@lru_cache(maxsize=None)
def _pair(folder: str) -> tuple[HFTokenizer, Tokenizer]:
    path = MODELS / folder
    config = path / "tokenizer_config.json"
    ours = HFTokenizer(path, json.loads(config.read_text()) if config.exists() else {})
    chosen = fast_backend.load(ours)
    assert chosen.startswith("fastokens"), chosen
    return ours, Tokenizer.from_file(str(path / "tokenizer.json"))


def _strings(x, out: set) -> None:
    if isinstance(x, str):
        out.add(x)
    elif isinstance(x, dict):
        for v in x.values():
            _strings(v, out)
    elif isinstance(x, list):
        for v in x:
            _strings(v, out)


@lru_cache(maxsize=None)
def _corpus_texts(folder: str) -> list[str]:
    """Every string of the folder's profiles' request bodies and every rendered prompt."""
    _, ref = _pair(folder)
    texts: set[str] = set()
    for name, prof in PROFILES.items():
        cases = PARITY / "cases" / f"{name}.jsonl"
        if prof["model"].split("/")[-1] != folder or not cases.exists():
            continue
        for line in cases.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            _strings((case.get("request") or {}).get("body") or case.get("request_base"), texts)
            body = (case.get("response") or {}).get("body")
            if isinstance(body, dict) and isinstance(body.get("token_ids"), list):
                texts.add(ref.decode(body["token_ids"], skip_special_tokens=False))
    return sorted(texts)


def _assert_same(ours: HFTokenizer, ref: Tokenizer, text: str) -> None:
    for special in (False, True):
        ids = ref.encode(text, add_special_tokens=special).ids
        for _ in range(2):  # the second time its segments come from fastokens' segment cache
            assert ours.encode(text, add_special_tokens=special) == ids, (text[:200], special)
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == ref.decode(ids, skip_special_tokens=skip)
        keep = len(ids) // 2 + 1
        enc = ref.encode(text, add_special_tokens=False)
        enc.truncate(max(keep - (ref.num_special_tokens_to_add(False) if special else 0), 0), direction="left")
        assert ours.encode_keep_last(text, keep, special) == (ref.post_process(enc) if special else enc).ids
    tokens = ours.ids_to_tokens(ids)
    assert tokens == [ref.id_to_token(i) for i in ids]
    expected = ref.decoder.decode(tokens) if ref.decoder is not None else "".join(tokens)
    assert ours.tokens_to_string(tokens) == expected


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_model_switches_to_fastokens_and_drops_tokenizers(folder):
    ours, _ = _pair(folder)
    assert ours.backend == "fastokens"
    import fastokens

    assert isinstance(ours._tok, fastokens.Tokenizer)
    # fastokens' segment cache is on exactly where piecewise encoding is exact
    assert (ours._tok.segment_cache_stats() is not None) == ours.encodes_by_segments


@pytest.mark.parametrize("folder", FOLDERS)
def test_fast_backend_equals_tokenizers_on_the_corpus(folder):
    ours, ref = _pair(folder)
    texts = _corpus_texts(folder)
    if not texts:
        pytest.skip(f"no profile of the corpus uses {folder}")
    for text in texts:
        _assert_same(ours, ref, text)


_SHAPES = st.sampled_from([
    " ", "  ", "    ", "\n", "\n\n", "\r\n", "\t", " \t\n ", "\u00a0", "\u3000", "\u200b", "\u2028",
    "0", "12", "123", "1234", "3.14", "1,000,000", "٣", "½", "²",
    "日本語", "中文，标点。", "한국어", "ภาษาไทย", "العربية", "עברית",
    "🙂", "👍🏽", "👩\u200d👩\u200d👧", "🏳️\u200d🌈", "🇫🇷", "1️⃣", "\u200d", "\ufe0f",
    "e\u0301", "a\u0300\u0323", "\u0301", "ﬁ", "ｆｕｌｌ",
    "\x00", "\x01", "\x7f", "\x1b[0m", "\ufffd", "\ufeff", "\U0010ffff", "\\xff", "\\u0000",
    "'s", "'S", "n't", "I'm", "'ll", "...", "!!!", "--", "://", "{\"a\": [1]}",
])


@st.composite
def _text(draw, added: list[str]) -> str:
    part = st.one_of(
        st.sampled_from(added) if added else st.just(""),
        _SHAPES,
        st.text(max_size=30),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
        st.builds(lambda c, n: c * n, st.sampled_from(["a", "é", "日", " ", "\n", "9", "🙂", "ab"]),
                  st.integers(50, 3000)),
    )
    return "".join(draw(st.lists(part, max_size=16)))


@pytest.mark.parametrize("folder", FOLDERS)
@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fast_backend_equals_tokenizers_on_generated_text(folder, data):
    ours, ref = _pair(folder)
    added = sorted(ours.added_vocab)
    _assert_same(ours, ref, data.draw(_text(added[:64] + added[-64:])))


def test_the_backend_line_names_the_installed_fastokens_version():
    from importlib.metadata import version

    path = MODELS / "qwen3"
    tok = HFTokenizer(path, json.loads((path / "tokenizer_config.json").read_text()))
    assert fast_backend.load(tok) == f"fastokens {version('fastokens')}"


def _rss_file_kb() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


def test_released_tokenizers_code_pages_come_back_when_its_code_runs():
    ref = Tokenizer.from_file(str(MODELS / "qwen3" / "tokenizer.json"))
    text = "Hello, world! 日本語 🙂 " * 50
    ids = ref.encode(text).ids
    before = _rss_file_kb()
    released = fast_backend.release_code_pages("tokenizers")
    assert released > 1024  # KB: the extension's code was resident and is not any more
    assert _rss_file_kb() < before - 1024
    assert ref.encode(text).ids == ids  # read back from the file as it runs
    assert fast_backend.release_code_pages("no_such_package") == 0


def test_released_shared_library_pages_come_back_when_their_code_runs():
    import hashlib
    import hmac
    import ssl  # noqa: F401  (maps OpenSSL whole, as the server's asyncio does)

    digest = hmac.new(b"key", b"stream state", hashlib.sha256).hexdigest()
    before = _rss_file_kb()
    released = fast_backend.release_code_pages("no_such_package", fast_backend.TLS_LIBRARIES)
    assert released > 1024  # KB of OpenSSL's code that start-up touched
    assert _rss_file_kb() < before - 1024
    assert hmac.new(b"key", b"stream state", hashlib.sha256).hexdigest() == digest
    assert fast_backend.release_code_pages("no_such_package", ("libno_such_library.so",)) == 0
