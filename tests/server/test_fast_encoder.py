"""The opt-in fast encoder (TOKENBRIDGE_FAST_ENCODER=1) gives tokenizers' ids on every corpus text.

Texts: every string of every profile's request bodies and the prompt text of every recorded
render, for each model folder with a ``tokenizer.json``; with and without special tokens.
"""

from __future__ import annotations

import json

import pytest

from conftest import PARITY, PROFILES

pytest.importorskip("fastokens")

from tokenbridge.model.tokenizer import HFTokenizer  # noqa: E402


def _strings(x, out: set) -> None:
    if isinstance(x, str):
        out.add(x)
    elif isinstance(x, dict):
        for v in x.values():
            _strings(v, out)
    elif isinstance(x, list):
        for v in x:
            _strings(v, out)


def _corpus_by_folder() -> dict:
    by_folder: dict = {}
    for name, prof in PROFILES.items():
        folder = (PARITY / prof["model"]).resolve()
        cases = PARITY / "cases" / f"{name}.jsonl"
        if not (folder / "tokenizer.json").exists() or not cases.exists():
            continue
        texts, ids = by_folder.setdefault(folder, (set(), set()))
        for line in cases.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            _strings((case.get("request") or {}).get("body") or case.get("request_base"), texts)
            body = (case.get("response") or {}).get("body")
            if isinstance(body, dict) and isinstance(body.get("token_ids"), list):
                ids.add(tuple(body["token_ids"]))
    return by_folder


CORPUS = _corpus_by_folder()


@pytest.mark.parametrize("folder", sorted(CORPUS), ids=lambda p: p.name)
def test_fast_encoder_ids_equal_tokenizers_on_the_corpus(folder):
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    tok = HFTokenizer(folder, config)
    assert tok.load_fast_encoder()
    texts, rendered = CORPUS[folder]
    texts = sorted(texts) + [tok.decode(list(ids)) for ids in sorted(rendered)]
    for add_special_tokens in (False, True):
        for text in texts:
            expected = tok._tok.encode(text, add_special_tokens=add_special_tokens).ids
            assert tok.encode(text, add_special_tokens=add_special_tokens) == expected, text[:200]
