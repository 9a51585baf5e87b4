"""The answer memo (server/answer_memo.py) never changes an answer: a kept answer is byte for
byte what a render gives, but for its fresh random request id; look-alike bodies, bodies that
name their id and requests with ``X-Request-Id`` are never answered from another's."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenbridge.cli import parse_serve_args
from tokenbridge.server.answer_memo import AnswerMemo
from tokenbridge.server.run import build

from tests.conftest import MODELS

PATH = "/v1/chat/completions/render"
JSON = {b"content-type": b"application/json"}
RID = re.compile(rb'^\{"request_id":"chatcmpl-([0-9a-f]{16})"')


@pytest.fixture(scope="module")
def apps():
    """The same server twice: memo on, and memo off (the reference)."""
    def app(memo_bytes: int):
        a = build(parse_serve_args([str(MODELS / "qwen3"), "--served-model-name", "qwen3", "--tool-call-parser",
                                    "hermes", "--enable-auto-tool-choice", "--reasoning-parser", "qwen3"]))
        a.answer_memo = AnswerMemo(memo_bytes)
        return a
    return app(4 * 1024 * 1024), app(0)


def ask(app, body: bytes, headers=JSON) -> tuple[int, bytes]:
    status, _, payload = app.answer("POST", PATH, headers, body)
    return status, payload


def same_but_id(a: bytes, b: bytes) -> bool:
    ma, mb = RID.match(a), RID.match(b)
    if ma is None or mb is None:
        return a == b
    return a[ma.end():] == b[mb.end():]


def test_a_repeated_body_is_answered_from_the_memo_with_a_fresh_id_each_time(apps):
    on, off = apps
    body = json.dumps({"model": "qwen3", "messages": [{"role": "user", "content": "Hello there, memo."}]}).encode()
    answers = [ask(on, body)[1] for _ in range(6)]
    reference = ask(off, body)[1]
    assert on.answer_memo.get(PATH, body) is not None
    assert len({RID.match(a).group(1) for a in answers}) == 6
    assert all(same_but_id(a, reference) for a in answers)
    tokens = len(json.loads(reference)["token_ids"])
    assert on.answer_memo.get(PATH, body).tokens == tokens


def test_a_body_with_its_own_request_id_or_an_x_request_id_is_not_kept(apps):
    on, off = apps
    named = json.dumps({"model": "qwen3", "request_id": "mine", "messages": [{"role": "user", "content": "Hi"}]}).encode()
    plain = json.dumps({"model": "qwen3", "messages": [{"role": "user", "content": "Hi, header"}]}).encode()
    for _ in range(4):
        assert ask(on, named) == ask(off, named)
        with_header = {**JSON, b"x-request-id": b"abc"}
        assert ask(on, plain, with_header) == ask(off, plain, with_header)
    assert on.answer_memo.get(PATH, named) is None
    assert on.answer_memo.get(PATH, plain) is None
    for _ in range(4):
        ask(on, plain)
    assert json.loads(ask(on, plain, {**JSON, b"x-request-id": b"abc"})[1])["request_id"] == "chatcmpl-abc"


def test_errors_are_never_kept(apps):
    on, off = apps
    body = json.dumps({"model": "qwen3", "messages": [{"role": "user", "content": "x"}], "max_tokens": 10**9}).encode()
    for _ in range(4):
        assert ask(on, body) == ask(off, body)
    assert on.answer_memo.get(PATH, body) is None


_text = st.text(alphabet="ab c\u00e9\"\\\n", min_size=1, max_size=12)
_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"]), "content": _text})
_body = st.fixed_dictionaries(
    {"model": st.just("qwen3"), "messages": st.lists(_message, min_size=1, max_size=3)},
    optional={"max_tokens": st.integers(0, 50), "temperature": st.sampled_from([0, 0.5, 1]),
              "seed": st.integers(0, 2**64 + 5), "stop": _text, "add_generation_prompt": st.booleans(),
              "tools": st.just([{"type": "function", "function": {"name": "f", "parameters": {}}}])},
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(_body, min_size=1, max_size=4), flips=st.lists(st.integers(0, 10**6), max_size=6))
def test_look_alike_bodies_get_the_answer_a_memo_off_server_gives(apps, bodies, flips):
    """Bodies repeated, and copies with one byte changed (the same length), in any order: each
    answer equals the memo-off server's, request id aside."""
    on, off = apps
    raw = [json.dumps(b, ensure_ascii=False).encode() for b in bodies]
    for i, f in enumerate(flips):  # same-length look-alikes
        b = bytearray(raw[i % len(raw)])
        pos = f % len(b)
        b[pos] = ord("a") if b[pos] != ord("a") else ord("b")
        raw.append(bytes(b))
    for body in raw * 3 + raw[::-1]:
        got, want = ask(on, body), ask(off, body)
        assert got[0] == want[0]
        assert same_but_id(got[1], want[1]), (body, got, want)


def test_rendered_tokens_are_counted_once_per_request_kept_or_not(apps):
    on, _ = apps
    key = ("rendered", PATH)
    body = json.dumps({"model": "qwen3", "seed": 1, "messages": [{"role": "user", "content": "count me"}]}).encode()
    before = on.metrics._tokens.get(key, 0)
    answers = [ask(on, body)[1] for _ in range(5)]
    assert on.answer_memo.get(PATH, body) is not None
    assert on.metrics._tokens.get(key, 0) - before == 5 * len(json.loads(answers[0])["token_ids"])
