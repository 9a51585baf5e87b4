"""The segment cache never changes ids: piecewise encoding equals ``tokenizers`` on every
corpus prompt of every model, and on random text mixed with added tokens."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from conftest import MODELS, PARITY, PROFILES
from tokenbridge.model.tokenizer import HFTokenizer

FOLDERS = sorted({PROFILES[p]["model"].split("/")[-1] for p in PROFILES} - {"mistral-tekken"})


@lru_cache(maxsize=None)
def _pair(folder: str) -> tuple[HFTokenizer, Tokenizer]:
    path = MODELS / folder
    ours = HFTokenizer(path, json.loads((path / "tokenizer_config.json").read_text()))
    return ours, Tokenizer.from_file(str(path / "tokenizer.json"))


def _corpus_prompts(folder: str) -> list[str]:
    """Prompt texts of the corpus: rendered prompts decoded back, and /tokenize prompts."""
    ours, ref = _pair(folder)
    texts = []
    for name, prof in PROFILES.items():
        if not prof["model"].endswith(folder):
            continue
        for line in open(PARITY / "cases" / f"{name}.jsonl", encoding="utf-8"):
            case = json.loads(line)
            body = case.get("response", {}).get("body")
            if case["kind"] == "chat_render" and isinstance(body, dict) and "token_ids" in body:
                texts.append(ref.decode(body["token_ids"], skip_special_tokens=False))
            req = case.get("request", {}).get("body") or {}
            if isinstance(req, dict) and isinstance(req.get("prompt"), str):
                texts.append(req["prompt"])
    return texts


@pytest.mark.parametrize("folder", FOLDERS)
def test_cached_encode_equals_tokenizers_on_the_corpus(folder):
    ours, ref = _pair(folder)
    texts = _corpus_prompts(folder)
    assert texts
    for text in texts * 2:  # the second round is served from the cache
        assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_cached_encode_equals_tokenizers_on_random_text(data):
    folder = data.draw(st.sampled_from(FOLDERS))
    ours, ref = _pair(folder)
    added = list(ours.added_vocab)[:40]
    parts = data.draw(
        st.lists(
            st.one_of(
                st.sampled_from(added),
                st.text(min_size=0, max_size=40),
                st.sampled_from([" ", "\n\n", "  x", "é\u0301", "🙂", "\t", "a" * 300]),
            ),
            max_size=12,
        )
    )
    text = "".join(parts)
    assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids
