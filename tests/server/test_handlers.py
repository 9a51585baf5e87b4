"""Route handlers: a long derender body, whose engine output is decoded straight into structs,
is answered exactly as when it is parsed into dicts first."""

from __future__ import annotations

import json
import random
import re

import msgspec
import pytest

from tokenbridge.cli import parse_serve_args
from tokenbridge.server import handlers
from tokenbridge.server.app import Request
from tokenbridge.server.run import build

from tests.conftest import MODELS


@pytest.fixture(scope="module")
def app():
    return build(parse_serve_args([str(MODELS / "qwen3"), "--served-model-name", "qwen3", "--tool-call-parser",
                                   "hermes", "--enable-auto-tool-choice", "--reasoning-parser", "qwen3"]))


def _body(app, lax_values: bool) -> bytes:
    tok = app.model.tokenizer
    ids = tok.encode("<think>\nPlanning the answer.\n</think>\n\n" + "Les élèves ont lu 日本語 😀. " * 40)
    rng = random.Random(7)
    content = []
    for i, t in enumerate(ids):
        top = [{"token_id": a, "logprob": -0.5 * r - rng.random(), "rank": r + 1}
               for r, a in enumerate([t] + [rng.randrange(1000, 150000) for _ in range(4)])]
        entry = {"token_id": t, "logprob": top[0]["logprob"], "rank": 1, "top_logprobs": top}
        if lax_values and i == 3:
            entry["rank"] = "1"  # pydantic-lax: a numeric string is an int
        content.append(entry)
    return json.dumps({
        "model": "qwen3",
        "generate_response": {"request_id": "r1", "choices": [{"index": 0, "token_ids": ids, "finish_reason": "stop",
                                                               "logprobs": {"content": content}}]},
        "chat_request": {"model": "qwen3", "messages": [{"role": "user", "content": "Hi"}],
                         "logprobs": True, "top_logprobs": 4},
    }).encode()


def _answer(app, body: bytes) -> bytes:
    out = msgspec.json.encode(handlers.chat_derender(Request(body, {}, app.model, app.cfg)))
    return re.sub(rb'"created":\d+', b"", out)


@pytest.mark.parametrize("lax_values", [False, True], ids=["well typed", "needs lax coercion"])
def test_a_long_derender_body_is_answered_as_when_parsed_into_dicts_first(app, monkeypatch, lax_values):
    body = _body(app, lax_values)
    assert len(body) >= handlers.VIEW_FROM_BYTES
    typed = _answer(app, body)
    monkeypatch.setattr(handlers, "VIEW_FROM_BYTES", len(body) + 1)
    assert typed == _answer(app, body)
    assert b'"top_logprobs":[{"token":' in typed
