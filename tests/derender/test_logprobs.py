"""Logprob strings and bytes: the per-token table stays small and never changes an answer."""

from __future__ import annotations

import json

import msgspec

from conftest import MODELS
from tokenbridge.derender import logprobs
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.protocol.engine import GenerateLogprobs, TokenLogprob, TopLogprob


def _qwen3() -> HFTokenizer:
    folder = MODELS / "qwen3"
    return HFTokenizer(folder, json.loads((folder / "tokenizer_config.json").read_text()))


def test_pieces_table_is_bounded_and_answers_as_when_empty(monkeypatch):
    tok = _qwen3()
    ids = tok.encode("Les élèves 日本語 😀 naïve") + list(range(1000, 1200))
    lp = GenerateLogprobs(content=[
        TokenLogprob(token_id=t, logprob=-1.0, top_logprobs=[TopLogprob(token_id=t + 1, logprob=-2.0)]) for t in ids])
    cold, _ = logprobs.chat_logprobs(tok, lp, None, [])
    monkeypatch.setattr(logprobs._Pieces, "CAP", 32)
    logprobs._pieces(tok).table.clear()
    for _ in range(2):
        assert logprobs.chat_logprobs(tok, lp, None, [])[0] == cold
        assert len(logprobs._pieces(tok).table) <= 32


def test_entries_are_written_as_vllm_writes_them():
    """Each entry is ``token, logprob, bytes, top_logprobs`` in that order; the alternatives
    have no ``top_logprobs`` of their own, and ``bytes`` is a list of ints."""
    tok = _qwen3()
    ids = tok.encode("naïve 日本")
    lp = GenerateLogprobs(content=[
        TokenLogprob(token_id=t, logprob=-0.5, top_logprobs=[TopLogprob(token_id=t, logprob=-0.5),
                                                             TopLogprob(token_id=t + 7, logprob=-3.25)])
        for t in ids])
    out, _ = logprobs.chat_logprobs(tok, lp, None, [])
    text = msgspec.json.encode(out).decode()
    entries = json.loads(text, object_pairs_hook=list)[0][1]
    assert [k for k, _ in entries[0]] == ["token", "logprob", "bytes", "top_logprobs"]
    tops = dict(entries[0])["top_logprobs"]
    assert [[k for k, _ in t] for t in tops] == [["token", "logprob", "bytes"]] * 2
    assert "".join(dict(e)["token"] for e in entries) == "naïve 日本"
    assert bytes(b for e in entries for b in dict(e)["bytes"]) == "naïve 日本".encode()


def test_an_answer_with_an_int_past_64_bits_writes_the_same_bytes():
    """Such an answer is written by the stdlib (``server.app._encode``); the bytes, kept as JSON,
    are written as the arrays they hold."""
    from tokenbridge.server.app import _encode

    tok = _qwen3()
    lp = GenerateLogprobs(content=[TokenLogprob(token_id=t, logprob=-0.5) for t in tok.encode("naïve 日本 😀")])
    out, _ = logprobs.chat_logprobs(tok, lp, None, [])
    answer = {"logprobs": out, "kv_transfer_params": {"seed": 2**70}}
    written = json.loads(_encode(answer))
    assert written["kv_transfer_params"] == {"seed": 2**70}
    assert written["logprobs"] == json.loads(msgspec.json.encode(out))
    assert bytes(b for e in written["logprobs"]["content"] for b in e["bytes"]) == "naïve 日本 😀".encode()
