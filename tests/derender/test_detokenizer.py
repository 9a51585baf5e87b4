"""The incremental detokenizer: chunking never changes the text, and the byte-level shortcut
equals vLLM's prefix/read-offset algorithm."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS
from tokenbridge.derender.detokenizer import Detokenizer
from tokenbridge.model.tokenizer import HFTokenizer

TEXTS = [
    "Hello world, héllo 😀! Ünïcödé — “quotes” 日本語 🇫🇷 \u200d",
    "<think>\nhm\n</think>\n\nHi there, 🚀🔥👩‍👩‍👧 ∑∫√π.",
    "def fib(n):\n    return n if n < 2 else fib(n-1)\n\tTabbed  spaces   ",
]


def _tokenizer(name: str) -> HFTokenizer:
    folder = MODELS / name
    return HFTokenizer(folder, json.loads((folder / "tokenizer_config.json").read_text()))


@pytest.fixture(scope="module", params=["qwen3", "llama3", "mistral-v0.1-spm", "deepseek-v3"])
def tok(request):
    return _tokenizer(request.param)


def _detok(tok, chunks, prompt, skip):
    d = Detokenizer(tok, skip).seed(prompt)
    out = []
    for c in chunks:
        # Each chunk continues from a restored snapshot, as a stream would.
        d = Detokenizer(tok, skip).restore(d.snapshot()) if out else d
        out.append(d.feed(c))
    return "".join(out)


@pytest.mark.parametrize("text", TEXTS)
def test_one_feed_reproduces_the_text(tok, text):
    ids = tok.encode(text)
    assert Detokenizer(tok, False).feed(ids) == tok.decode(ids)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_chunking_gives_the_same_text(tok, data):
    text = data.draw(st.sampled_from(TEXTS))
    ids = tok.encode(text)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=8)))
    chunks = [ids[a:b] for a, b in zip([0, *cuts], [*cuts, len(ids)])]
    prompt = tok.encode("Say something:")
    assert _detok(tok, chunks, prompt, False) == _detok(tok, [ids], prompt, False)


def test_byte_level_shortcut_equals_offset_algorithm():
    tok = _tokenizer("qwen3")
    for text in TEXTS:
        ids = tok.encode(text) + [151645, 151668]
        fast = Detokenizer(tok, False)
        slow = Detokenizer(tok, False)
        slow.byte_level = False
        assert "".join(fast.feed([i]) for i in ids) == "".join(slow.feed([i]) for i in ids)


def test_incomplete_utf8_is_held_back_until_complete():
    tok = _tokenizer("qwen3")
    text = next(c for c in "𝔘𓀀🜁𐎀🂡" if _first_token_splits_a_char(tok, c))
    ids = tok.encode(text)
    d = Detokenizer(tok, False)
    assert d.feed(ids[:1]) == ""
    assert d.feed(ids[1:]) == text


def _first_token_splits_a_char(tok, text: str) -> bool:
    ids = tok.encode(text)
    try:
        tok.token_bytes(ids[0]).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_sentencepiece_keeps_the_first_leading_space_when_seeded():
    tok = _tokenizer("mistral-v0.1-spm")
    prompt = tok.encode("The capital of France is", add_special_tokens=True)
    out = tok.encode("Paris")  # one piece, "▁Paris"
    assert Detokenizer(tok, True).seed(prompt).feed(out) == " Paris"
    assert Detokenizer(tok, True).feed(out) == "Paris"


def test_skip_special_tokens_drops_named_specials():
    tok = _tokenizer("qwen3")
    ids = tok.encode("Hi") + [151645]
    assert Detokenizer(tok, True).feed(ids) == "Hi"
    assert Detokenizer(tok, False).feed(ids) == "Hi<|im_end|>"


def test_a_cut_mid_character_still_emits_the_text_before_it():
    tok = _tokenizer("qwen3")
    text = next(c for c in "𝔘𓀀🜁𐎀🂡" if _first_token_splits_a_char(tok, c))
    ids = tok.encode("query='emoji " + text)
    out = Detokenizer(tok, False).feed(ids[:-1])
    assert out.startswith("query='emoji") and "\ufffd" not in out


def test_token_bytes_table_stays_bounded_and_matches_the_tokenizer(tok, monkeypatch):
    if not tok.byte_level:
        pytest.skip("only byte-level vocabularies read the table")
    from tokenbridge.derender import detokenizer

    monkeypatch.setattr(detokenizer._TokenBytes, "CAP", 64)
    table = detokenizer._TokenBytes(tok)
    for start in range(0, 1000, 50):
        ids = list(range(start, start + 50))
        assert list(table.pieces(ids)) == [tok.token_bytes(i) for i in ids]
        assert len(table.table) <= 64
    assert table.pieces([7]) == (tok.token_bytes(7),)
    assert table.pieces([]) == ()
