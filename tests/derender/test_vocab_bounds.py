"""Ids the model cannot produce (at or past its ``vocab_size``) are a 400 before any decode;
ids between the tokenizer's vocabulary and ``vocab_size`` (padding rows) decode as in vLLM."""

from __future__ import annotations

import pytest

from tests.conftest import PROFILES, post

M = PROFILES["qwen3"]["served_name"]
CHAT = {"model": M, "messages": [{"role": "user", "content": "hi"}]}
VOCAB = 151936  # qwen3's config.json vocab_size; its tokenizer has 151669 ids
PADDING = 151700  # a padding row: no token, decodes to nothing
HELLO = 9707


def _chat_oneshot(ids, **choice):
    return "/v1/chat/completions/derender", {
        "model": M,
        "generate_response": {"request_id": "r", "choices": [{"index": 0, "token_ids": ids, **choice}]},
        "prompt_token_ids": [HELLO],
        "chat_request": CHAT,
    }


def _completion_oneshot(ids):
    return "/v1/completions/derender", {
        "model": M,
        "generate_responses": [{"request_id": "r", "choices": [{"index": 0, "token_ids": ids}]}],
        "prompt_tokens": [1],
        "completion_request": {"model": M, "prompt": "hi"},
    }


def _chat_stream(ids, state=None, prompt=(HELLO,)):
    return "/v1/chat/completions/derender", {
        "model": M,
        "stream": True,
        "generate_chunk": {"request_id": "r", "choices": [{"index": 0, "token_ids": ids}]},
        "stream_state": state,
        "prompt_token_ids": list(prompt),
        "chat_request": CHAT,
    }


def _completion_stream(ids):
    return "/v1/completions/derender", {
        "model": M,
        "stream": True,
        "generate_chunk": {"request_id": "r", "choices": [{"index": 0, "token_ids": ids}]},
        "prompt_tokens": 1,
        "completion_request": {"model": M, "prompt": "hi"},
    }


def _logprob(token_id, top=()):
    return {"token_id": token_id, "logprob": -0.1, "top_logprobs": [{"token_id": t, "logprob": -1.0} for t in top]}


OUT_OF_VOCAB = {
    "chat one-shot": _chat_oneshot([HELLO, VOCAB]),
    "chat one-shot, far": _chat_oneshot([HELLO, 2**40]),
    "completion one-shot": _completion_oneshot([VOCAB + 5]),
    "chat stream": _chat_stream([VOCAB]),
    "chat stream prompt": _chat_stream([HELLO], prompt=(HELLO, VOCAB)),
    "chat stream vLLM state": _chat_stream(
        [HELLO], state={"output_token_ids": [VOCAB], "output_chunk_lens": [1]}
    ),
    "completion stream": _completion_stream([VOCAB]),
    "logprob token": _chat_oneshot([HELLO], logprobs={"content": [_logprob(VOCAB)]}),
    "top logprob token": _chat_oneshot([HELLO], logprobs={"content": [_logprob(HELLO, [VOCAB])]}),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_VOCAB))
def test_an_id_past_vocab_size_is_a_400(servers, case):
    path, body = OUT_OF_VOCAB[case]
    status, resp = post(servers.port("qwen3"), path, body)
    assert status == 400, resp
    assert resp["error"]["type"] == "BadRequestError"
    assert "out of vocabulary" in resp["error"]["message"] and "vocab_size=151936" in resp["error"]["message"]


def test_padding_rows_below_vocab_size_decode_to_nothing(servers):
    status, resp = post(servers.port("qwen3"), *_completion_oneshot([HELLO, PADDING]))
    assert status == 200, resp
    assert resp["choices"][0]["text"] == "Hello"
    assert resp["usage"]["completion_tokens"] == 2


def test_the_first_entry_with_too_many_top_logprobs_is_named_in_the_400(servers):
    """At most ``--max-logprobs`` alternatives and the sampled token (20 + 1 by default); the
    error gives the length of the first entry past that."""
    content = [_logprob(HELLO, [HELLO] * 21), _logprob(HELLO, [HELLO] * 22), _logprob(HELLO, [HELLO] * 23)]
    path, body = _chat_oneshot([HELLO] * 3, logprobs={"content": content})
    status, resp = post(servers.port("qwen3"), path, body)
    assert status == 400, resp
    assert resp["error"]["message"] == "top_logprobs length (22) in choice 0 exceeds max_logprobs (20)."


def test_a_negative_logprob_id_is_out_of_vocabulary(servers):
    path, body = _chat_oneshot([HELLO], logprobs={"content": [_logprob(HELLO, [HELLO, -3])]})
    status, resp = post(servers.port("qwen3"), path, body)
    assert status == 400, resp
    assert resp["error"]["message"] == "Token id -3 in logprobs of choice 0 is out of vocabulary (vocab_size=151936)."
