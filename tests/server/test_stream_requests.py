"""A derender stream's repeated fields (its request, its prompt ids) are decoded and checked on
its first chunk and kept: every chunk answers as it would have with them decoded again, errors
included, and answering never changes what is kept."""

from __future__ import annotations

import json
import re

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenbridge.cli import parse_serve_args
from tokenbridge.protocol import lax
from tokenbridge.protocol.engine import DerenderChatRequest, GenerateResponse
from tokenbridge.protocol.errors import ApiError
from tokenbridge.server import handlers, stream_requests
from tokenbridge.server.app import Request, _encode
from tokenbridge.server.run import build

from tests.conftest import MODELS

SERVED = "qwen3"
CHAT_PATH = "/v1/chat/completions/derender"
COMPLETION_PATH = "/v1/completions/derender"
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
OUTPUT = ("<think>\nThe user wants the weather in Zürich and Kyoto 😀; both need a call.\n</think>\n\n"
          "Checking both cities.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n"
          "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"京都\"}}\n</tool_call>")


@pytest.fixture(scope="module")
def app():
    return build(parse_serve_args([str(MODELS / "qwen3"), "--served-model-name", SERVED, "--tool-call-parser",
                                   "hermes", "--enable-auto-tool-choice", "--reasoning-parser", "qwen3"]))


@pytest.fixture(scope="module")
def plain_app():
    return build(parse_serve_args([str(MODELS / "qwen3"), "--served-model-name", SERVED]))


def conversation(turns: int) -> dict:
    """A chat request with ``turns`` earlier calls and their results, a reasoning field given
    under its old name (which the checks rename), and a value that needs lax coercion."""
    messages = [{"role": "system", "content": "You answer weather questions. " * 8}]
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"What is the weather in city {i}? " * 6},
            {"role": "assistant", "content": "", "reasoning_content": f"Look up city {i}.",
             "tool_calls": [{"id": f"call_{i}", "type": "function",
                             "function": {"name": "get_weather", "arguments": json.dumps({"city": f"c{i}"})}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": f"Sunny, {20 + i} C."},
        ]
    messages.append({"role": "user", "content": "And in Zürich and Kyoto?"})
    return {"model": SERVED, "messages": messages, "tools": [WEATHER], "max_tokens": "64"}


def prompt_ids(app, chat: dict) -> list[int]:
    body = json.dumps(dict(chat, max_tokens=64)).encode()
    return json.loads(_encode(handlers.chat_render(Request(body, {}, app.model, app.cfg))))["token_ids"]


def dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


def answer(app, path: str, body: dict) -> tuple[int, bytes, str | None]:
    """The status, the body with what differs between two runs (time, fresh call ids and the
    state that carries them) masked, and the state."""
    raw = dump(body)
    handler = handlers.chat_derender if path == CHAT_PATH else handlers.completion_derender
    try:
        status, out = 200, _encode(handler(Request(raw, {}, app.model, app.cfg)))
    except ApiError as e:
        status, out = e.status, _encode(e.envelope())
    state = json.loads(out).get("stream_state") if status == 200 else None
    out = re.sub(rb'"created":\d+', b'"created":0', out)
    out = re.sub(rb'"stream_state":"[^"]*"', b'"stream_state":"s"', out)
    return status, re.sub(rb"chatcmpl-tool-[0-9a-f]+", b"chatcmpl-tool-x", out), state


def stream(app, base: dict, ids: list[int], cuts: list[int], path=CHAT_PATH) -> list:
    """Each chunk's answer; the state is carried from one to the next."""
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(ids))), len(ids)]
    out, state = [], None
    for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
        last = k == len(bounds) - 2
        chunk = {"request_id": "chatcmpl-s", "choices": [
            {"index": 0, "token_ids": ids[a:b], "finish_reason": "stop" if last else None}]}
        status, body, state = answer(app, path, dict(base, stream=True, stream_state=state, generate_chunk=chunk))
        out.append((status, body))
    return out


def without_kept_fields(monkeypatch, fn):
    """``fn()`` with every derender body decoded whole, as before anything was kept."""
    with monkeypatch.context() as m:
        m.setattr(handlers, "derender_view", lambda r, *args: None)
        return fn()


def stream_base(app, turns: int) -> dict:
    chat = conversation(turns)
    return {"model": SERVED, "chat_request": chat, "prompt_token_ids": prompt_ids(app, chat)}


@pytest.fixture(scope="module")
def chat_base(app) -> dict:
    base = stream_base(app, 12)
    assert len(json.dumps(base)) >= handlers.VIEW_FROM_BYTES
    return base


@pytest.fixture(scope="module")
def short_base(app) -> dict:
    base = stream_base(app, 0)
    assert len(json.dumps(base)) < handlers.VIEW_FROM_BYTES  # kept too: its chunks name ``stream``
    return base


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, 80), max_size=12), short=st.booleans())
def test_a_streams_chunks_answer_as_when_each_decodes_its_request_again(app, chat_base, short_base, monkeypatch,
                                                                         cuts, short):
    base = short_base if short else chat_base
    ids = app.model.tokenizer.encode(OUTPUT) + [app.model.tokenizer.eos_token_id]
    hits = stream_requests.stream_requests._kept.hits
    kept = stream(app, base, ids, cuts)
    assert len(kept) == 1 or stream_requests.stream_requests._kept.hits > hits  # later chunks took them
    assert kept == without_kept_fields(monkeypatch, lambda: stream(app, base, ids, cuts))
    assert all(status == 200 for status, _ in kept)


def test_answering_never_changes_what_is_kept(app, chat_base):
    ids = app.model.tokenizer.encode(OUTPUT)
    stream(app, chat_base, ids, [3, 9, 40])
    raw = tuple(dump(chat_base[n]) for n in ("chat_request", "prompt_token_ids"))
    body = dump(dict(chat_base, stream=True))
    view = lax.decode_view(body, DerenderChatRequest, "generate_response", GenerateResponse,
                           stream_requests.REPEATED["chat_request"])
    known = stream_requests.stream_requests.look_up(view, "chat_request", app.model, app.cfg)
    assert known is not None and known.raw == raw and known.kept
    chat, prompt = known.values
    assert prompt == chat_base["prompt_token_ids"]
    again = json.loads(msgspec.json.encode(chat))
    stream(app, chat_base, ids, [1, 2, 5])
    assert json.loads(msgspec.json.encode(known.values[0])) == again


def _call_arguments_not_a_string(base: dict) -> dict:
    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": {"city": 5}}}
    return {"chat_request": dict(base["chat_request"], messages=[{"role": "assistant", "tool_calls": [call]}])}


BAD_CHUNKS = {
    "delta id out of vocabulary": lambda base: {
        "generate_chunk": {"request_id": "c", "choices": [{"index": 0, "token_ids": [10 ** 9]}]}},
    "model not served": lambda base: {"model": "not-served"},
    "prompt id out of vocabulary": lambda base: {"prompt_token_ids": [*base["prompt_token_ids"][:-1], 10 ** 9]},
    "tool call arguments not a string": _call_arguments_not_a_string,
    "bad state": lambda base: {"stream_state": "AAAA"},
}


@pytest.mark.parametrize("bad", list(BAD_CHUNKS))
def test_a_bad_chunk_of_a_kept_stream_fails_as_it_would_have(app, chat_base, monkeypatch, bad):
    ids = app.model.tokenizer.encode(OUTPUT)
    first = {"request_id": "c", "choices": [{"index": 0, "token_ids": ids[:4]}]}
    state = answer(app, CHAT_PATH, dict(chat_base, stream=True, stream_state=None, generate_chunk=first))[2]
    body = dict(chat_base, stream=True, stream_state=state,
                generate_chunk={"request_id": "c", "choices": [{"index": 0, "token_ids": ids[4:6]}]})
    body.update(BAD_CHUNKS[bad](chat_base))
    kept = answer(app, CHAT_PATH, body)[:2]
    assert kept[0] >= 400
    assert kept == without_kept_fields(monkeypatch, lambda: answer(app, CHAT_PATH, body)[:2])
    assert answer(app, CHAT_PATH, body)[:2] == kept  # a failed chunk keeps nothing new


def test_fields_kept_for_one_server_are_not_taken_by_another(app, plain_app, chat_base, monkeypatch):
    ids = app.model.tokenizer.encode(OUTPUT)
    stream(app, chat_base, ids, [5])
    plain = stream(plain_app, chat_base, ids, [5, 7])
    assert plain == without_kept_fields(monkeypatch, lambda: stream(plain_app, chat_base, ids, [5, 7]))
    assert b"<tool_call>" in b"".join(body for _, body in plain)  # no parser: the markup is content


def test_a_completion_streams_request_is_kept_too(app, monkeypatch):
    tok = app.model.tokenizer
    request = {"model": SERVED, "prompt": "Write about the sea. " * 300, "logprobs": 2}
    base = {"model": SERVED, "completion_request": request}
    ids = tok.encode("The sea is wide and 深い 🌊, and it keeps moving.")
    hits = stream_requests.stream_requests._kept.hits
    kept = stream(app, base, ids, [2, 5, 9], path=COMPLETION_PATH)
    assert stream_requests.stream_requests._kept.hits > hits
    assert kept == without_kept_fields(monkeypatch, lambda: stream(app, base, ids, [2, 5, 9], path=COMPLETION_PATH))
    assert all(status == 200 for status, _ in kept)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)
_FIELDS = ["model", "stream", "stream_state", "prompt_token_ids", "prompt_tokens", "chat_request", "generate_chunk",
           "generate_response", "extra"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(_FIELDS), _JSON_VALUES, min_size=1, max_size=3), short=st.booleans())
def test_any_field_of_a_kept_streams_chunk_changed_answers_as_without_keeping(app, chat_base, short_base, monkeypatch,
                                                                               changes, short):
    base = short_base if short else chat_base
    ids = app.model.tokenizer.encode(OUTPUT)
    first = {"request_id": "c", "choices": [{"index": 0, "token_ids": ids[:4]}]}
    state = answer(app, CHAT_PATH, dict(base, stream=True, stream_state=None, generate_chunk=first))[2]
    body = dict(base, stream=True, stream_state=state,
                generate_chunk={"request_id": "c", "choices": [{"index": 0, "token_ids": ids[4:6]}]})
    body.update(changes)
    kept = answer(app, CHAT_PATH, body)[:2]
    assert kept[0] < 500, kept
    assert kept == without_kept_fields(monkeypatch, lambda: answer(app, CHAT_PATH, body)[:2])
