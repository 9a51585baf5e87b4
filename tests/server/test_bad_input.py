"""Bad input on every POST route: a 4xx in the OpenAI error envelope, never a 5xx or a hang.

Against a real server (profile qwen3): wrong JSON types for every field of a valid body,
malformed bodies, wrong content types, and hypothesis-generated JSON. Cases recorded from
vLLM 0.33 (``data/bad_input_vllm.json``) must also get vLLM's status, ``type`` and ``code``.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import replay

TIMEOUT = 10
M = "Qwen/Qwen3-8B"
PIDS = [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198]
CHAT = {"model": M, "messages": [{"role": "user", "content": "hi"}]}
CHUNK = {"request_id": "r", "choices": [{"index": 0, "token_ids": [9707]}]}
# One valid body per route (and per derender mode); every field of each gets mutated.
BASES = {
    "chat_render": ("/v1/chat/completions/render", CHAT),
    "completion_render": ("/v1/completions/render", {"model": M, "prompt": "hi", "max_tokens": 5}),
    "chat_derender": (
        "/v1/chat/completions/derender",
        {
            "model": M,
            "generate_response": {"request_id": "r", "choices": [{"index": 0, "token_ids": [9707, 151645]}]},
            "prompt_token_ids": PIDS,
            "chat_request": CHAT,
        },
    ),
    "chat_derender_stream": (
        "/v1/chat/completions/derender",
        {"model": M, "stream": True, "generate_chunk": CHUNK, "prompt_token_ids": PIDS, "chat_request": CHAT},
    ),
    "completion_derender": (
        "/v1/completions/derender",
        {
            "model": M,
            "generate_responses": [{"request_id": "r", "choices": [{"index": 0, "token_ids": [9707]}]}],
            "prompt_tokens": [1],
            "prompt_token_ids": [[6023]],
            "completion_request": {"model": M, "prompt": "hi"},
        },
    ),
    "completion_derender_stream": (
        "/v1/completions/derender",
        {
            "model": M,
            "stream": True,
            "generate_chunk": CHUNK,
            "prompt_tokens": 1,
            "prompt_token_ids": [6023],
            "completion_request": {"model": M, "prompt": "hi"},
        },
    ),
    "tokenize": ("/tokenize", {"model": M, "prompt": "hi", "return_token_strs": True}),
    "tokenize_chat": ("/tokenize", {"model": M, "messages": [{"role": "user", "content": "hi"}]}),
    "detokenize": ("/detokenize", {"model": M, "tokens": [9707, 11]}),
}
PATHS = sorted({p for p, _ in BASES.values()})
DELETE = object()
WRONG = [
    "x", "5", "", "\u00e9\u2603\U0001f600\u0000", "\ud800", "y" * 20_000,
    5, 5.0, 5.5, -1, 0, 2**70, -(2**70), float("nan"), float("inf"),
    None, True, {}, {"a": 1}, [], [1], ["a"], [None], [[[[[]]]]], DELETE,
]  # fmt: skip
PARSE_ERROR = {"detail": "There was an error parsing the body"}
RAW = [
    (b"{not json", "application/json"),
    (b"", "application/json"),
    (b"[1, 2]", "application/json"),
    (b"5", "application/json"),
    (b"null", "application/json"),
    (b'"hi"', "application/json"),
    (b'{"a": 1} trailing', "application/json"),
    (b'{"model": "\xff\xfe", "prompt": "\xc3"}', "application/json"),
    (b"[" * 5000 + b"]" * 5000, "application/json"),
    (b'{"a":' * 3000 + b"1" + b"}" * 3000, "application/json"),
    (b'{"prompt": "a", "prompt": 5, "tokens": [1], "tokens": "x"}', "application/json"),
    (b'{"prompt": "hi"}', "text/plain"),
    (b'{"prompt": "hi"}', None),
    (b'{"prompt": "hi"}', "application/x-www-form-urlencoded"),
    (b'{"prompt": NaN, "tokens": [Infinity]}', "application/json"),
]


def request(port: int, method: str, path: str, raw: bytes | None = None, ctype: str | None = "application/json"):
    """One bounded HTTP call; returns (status, parsed JSON or text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        headers = {"Content-Type": ctype} if ctype is not None and raw is not None else {}
        conn.request(method, path, body=raw, headers=headers)
        resp = conn.getresponse()
        payload = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(payload)
    except ValueError:
        return resp.status, payload.decode("utf-8", "replace")


def post_json(port: int, path: str, body) -> tuple[int, object]:
    return request(port, "POST", path, json.dumps(body).encode("utf-8", "surrogatepass"))


def assert_clean(status: int, body, what: str) -> None:
    """Success, or a 4xx error in vLLM's envelope whose code equals the status."""
    assert status <= 499, f"{what}: {status} {str(body)[:300]}"
    if body == PARSE_ERROR:  # FastAPI's answer (as vLLM's) to bad UTF-8 or too-deep nesting
        assert status == 400
    elif status >= 400:
        assert isinstance(body, dict) and set(body) == {"error"}, f"{what}: {str(body)[:300]}"
        err = body["error"]
        assert set(err) == {"message", "type", "param", "code"}, f"{what}: {err}"
        assert err["code"] == status and isinstance(err["message"], str) and err["message"], f"{what}: {err}"
        assert isinstance(err["type"], str) and (err["param"] is None or isinstance(err["param"], str))


def field_paths(obj, prefix=()):
    """Every key path in ``obj`` (first element of lists only)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from field_paths(v, prefix + (k,))
    elif isinstance(obj, list) and obj:
        yield prefix + (0,)
        yield from field_paths(obj[0], prefix + (0,))


def mutate(body, path, value):
    out = copy.deepcopy(body)
    target = out
    for k in path[:-1]:
        target = target[k]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


@pytest.fixture(scope="module")
def port(request):
    """The qwen3 server; ``TOKENBRIDGE_TEST_PORT`` points the suite at one already running."""
    if os.environ.get("TOKENBRIDGE_TEST_PORT"):
        return int(os.environ["TOKENBRIDGE_TEST_PORT"])
    return request.getfixturevalue("servers").port("qwen3")


@pytest.fixture(autouse=True)
def still_healthy(port):
    yield
    assert request(port, "GET", "/health")[0] == 200


def _ints(v) -> bool:
    return isinstance(v, list) and all(isinstance(i, int) for i in v)


def _render(b) -> bool:
    return isinstance(b, dict) and _ints(b.get("token_ids")) and isinstance(b.get("sampling_params"), dict)


def _choices(b, obj: str) -> bool:
    return isinstance(b, dict) and b.get("object") == obj and isinstance(b.get("choices"), list)


# What a 200 of each route must be: the wire type, not just the status.
ANSWER = {
    "chat_render": _render,
    "completion_render": lambda b: isinstance(b, list) and bool(b) and all(map(_render, b)),
    "chat_derender": lambda b: _choices(b, "chat.completion"),
    "completion_derender": lambda b: _choices(b, "text_completion"),
    "chat_derender_stream": lambda b: _choices(b.get("chunk"), "chat.completion.chunk")
    and isinstance(b.get("stream_state"), str),
    "completion_derender_stream": lambda b: _choices(b.get("chunk"), "text_completion")
    and isinstance(b.get("stream_state"), str),
    "tokenize": lambda b: _ints(b.get("tokens")) and b.get("count") == len(b["tokens"]),
    "tokenize_chat": lambda b: _ints(b.get("tokens")) and b.get("count") == len(b["tokens"]),
    "detokenize": lambda b: isinstance(b.get("prompt"), str),
}
# The answer to each valid base ("Hello" = token 9707, qwen3 reasoning until </think>).
VALID = {
    "chat_render": lambda b: b["token_ids"] == PIDS,
    "completion_render": lambda b: b[0]["token_ids"] == [6023] and b[0]["sampling_params"]["max_tokens"] == 5,
    "chat_derender": lambda b: (b["choices"][0]["message"]["reasoning"], b["choices"][0]["message"]["content"],
                                b["choices"][0]["finish_reason"]) == ("Hello", None, "stop"),
    "chat_derender_stream": lambda b: b["chunk"]["choices"][0]["delta"]["reasoning"] == "Hello",
    "completion_derender": lambda b: b["choices"][0]["text"] == "Hello",
    "completion_derender_stream": lambda b: b["chunk"]["choices"][0]["text"] == "Hello",
    "tokenize": lambda b: (b["tokens"], b["token_strs"]) == ([6023], ["hi"]),
    "tokenize_chat": lambda b: b["tokens"] == PIDS,
    "detokenize": lambda b: b["prompt"] == "Hello,",
}  # fmt: skip


def assert_answer(route: str, status: int, body, what: str) -> None:
    """Clean, and a success is the route's wire type."""
    assert_clean(status, body, what)
    if status == 200:
        assert ANSWER[route](body), f"{what}: {str(body)[:300]}"


@pytest.mark.parametrize("route", sorted(BASES))
def test_valid_bases_succeed(port, route):
    path, body = BASES[route]
    status, resp = post_json(port, path, body)
    assert status == 200, resp
    assert ANSWER[route](resp) and VALID[route](resp), resp


@pytest.mark.parametrize("route", sorted(BASES))
def test_wrong_types_for_every_field(port, route):
    path, base = BASES[route]
    for fp in field_paths(base):
        for value in WRONG:
            what = f"{route} {'.'.join(map(str, fp))}={repr(value)[:30]}"
            assert_answer(route, *post_json(port, path, mutate(base, fp, value)), what)


@pytest.mark.parametrize("route", sorted(BASES))
def test_unknown_model(port, route):
    path, base = BASES[route]
    status, body = post_json(port, path, {**base, "model": "no-such-model"})
    assert_clean(status, body, route)
    assert (status, body["error"]["type"], body["error"]["param"]) == (404, "NotFoundError", "model")


@pytest.mark.parametrize("path", PATHS)
def test_malformed_bodies(port, path):
    for raw, ctype in RAW:
        status, body = request(port, "POST", path, raw, ctype)
        assert_clean(status, body, f"{path} {raw[:40]!r} {ctype}")
        assert status == 400, (raw[:40], body)


@pytest.mark.parametrize("path", PATHS)
def test_no_body(port, path):
    status, body = request(port, "POST", path)
    assert_clean(status, body, path)
    assert (status, body["error"]["type"]) == (400, "Bad Request") and "application/json" in body["error"]["message"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
    max_leaves=15,
)


@settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
@given(
    route=st.sampled_from(sorted(BASES)),
    extra=st.dictionaries(
        st.sampled_from(
            ["messages", "prompt", "tokens", "generate_response", "generate_chunk", "generate_responses",
             "chat_request", "completion_request", "stream", "stream_state", "prompt_token_ids",
             "prompt_tokens", "max_tokens", "n", "temperature", "tools", "tool_choice", "stop",
             "logprobs", "top_logprobs", "response_format", "echo", "add_special_tokens", "x"]
        ),
        JSON,
        max_size=4,
    ),
)  # fmt: skip
def test_random_json(port, route, extra):
    path, base = BASES[route]
    assert_answer(route, *post_json(port, path, {**base, **extra}), f"{route} {extra}")


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(path=st.sampled_from(PATHS), body=JSON)
def test_random_top_level(port, path, body):
    assert_clean(*post_json(port, path, body), f"{path} {body}")


VLLM = json.loads((Path(__file__).parent / "data" / "bad_input_vllm.json").read_text())["cases"]


def test_same_error_as_vllm(port):
    """Status, ``type`` and ``code`` equal what vLLM 0.33 answered for the same request; where
    vLLM crashed (a 500), a 400."""
    diffs = []
    for case in VLLM:
        if "raw" in case:
            status, body = request(port, "POST", case["path"], case["raw"].encode(), case["content_type"])
        else:
            status, body = post_json(port, case["path"], case["body"])
        assert_clean(status, body, case["note"])
        got = (status, body["error"]["type"], body["error"]["code"]) if status >= 400 else (status, None, None)
        if case["status"] >= 500:
            if status != 400:
                diffs.append(f"{case['route']} {case['note']}: {status} where vLLM crashed, not 400")
        elif got != (case["status"], case["type"], case["code"]):
            diffs.append(f"{case['route']} {case['note']}: {got} != vLLM {case['status'], case['type'], case['code']}")
    assert not diffs, "\n".join(diffs[:30])


EDGE = json.loads((Path(__file__).parent / "data" / "edge_input_vllm.json").read_text())["cases"]


@pytest.mark.parametrize("case", EDGE, ids=[f"{c['request']['path']} {c['note']}" for c in EDGE])
def test_edge_input_gets_vllms_answer(servers, case):
    """Inputs at the schema's edges (recorded from vLLM 0.33): an empty model name, null or
    missing engine request ids, ids past int64/uint32, malformed assistant tool calls, dict
    message content, lax numbers in derender bodies, engine logprobs the request did not ask
    for; vLLM accepts some and rejects others, and so must we."""
    req = case["request"]
    status, body = replay.http(servers.port(case.get("profile", "qwen3")), "POST", req["path"], req["body"])
    assert replay.compare_response(case["response"], status, body) is None


SURROGATE = b"a\xed\xa0\x80b"  # a lone surrogate as raw bytes inside a JSON string
SURROGATE_BODIES = {
    "/v1/chat/completions/render": b'{"model":"%s","messages":[{"role":"user","content":"%s"}]}',
    "/v1/completions/render": b'{"model":"%s","prompt":"%s"}',
    "/v1/messages/render": b'{"model":"%s","max_tokens":5,"messages":[{"role":"user","content":"%s"}]}',
    "/v1/responses/render": b'{"model":"%s","input":"%s"}',
    "/tokenize": b'{"model":"%s","prompt":"%s"}',
}


@pytest.mark.parametrize("path", sorted(SURROGATE_BODIES))
def test_raw_surrogate_bytes_are_a_400_as_in_vllm(port, path):
    raw = SURROGATE_BODIES[path] % (M.encode(), SURROGATE)
    status, body = request(port, "POST", path, raw)
    assert_clean(status, body, path)
    assert (status, body["error"]["type"]) == (400, "BadRequestError"), body


def _chat(**extra):
    return {**CHAT, **extra}


NO_FUNCTION = [{"type": "function"}]
# vLLM 0.33 answers these with a 500 (a crash in its validators); the schema's 400 is ours.
VLLM_CRASHES = {
    "json_schema is a number": _chat(response_format={"type": "json_schema", "json_schema": 5}),
    "json_schema is a list": _chat(response_format={"type": "json_schema", "json_schema": [1]}),
    "structured_outputs is a string": _chat(structured_outputs="x"),
    "structured_outputs is a number": _chat(structured_outputs=5),
    "tool without function, named choice": _chat(
        tools=NO_FUNCTION, tool_choice={"type": "function", "function": {"name": "f"}}
    ),
    "tool without function, required": _chat(tools=NO_FUNCTION, tool_choice="required"),
    "function without name, named choice": _chat(
        tools=[{"type": "function", "function": {}}], tool_choice={"type": "function", "function": {"name": "f"}}
    ),
}


@pytest.mark.parametrize("note", sorted(VLLM_CRASHES))
def test_where_vllm_crashes_the_answer_is_a_schema_400(port, note):
    status, body = post_json(port, "/v1/chat/completions/render", VLLM_CRASHES[note])
    assert_clean(status, body, note)
    assert (status, body["error"]["type"]) == (400, "Bad Request"), body
    assert body["error"]["param"].startswith("body."), body


def test_completion_structured_outputs_not_an_object_is_a_400(port):
    status, body = post_json(port, "/v1/completions/render", {"model": M, "prompt": "hi", "structured_outputs": "x"})
    assert (status, body["error"]["param"]) == (400, "body.structured_outputs"), body


@pytest.mark.parametrize("part", ["The answer", [[]], 5, None])
@pytest.mark.parametrize("role", ["user", "assistant"])
def test_responses_content_parts_that_are_not_objects_are_a_400(port, role, part):
    body = {"model": M, "input": [{"role": "user", "content": "hi"}, {"role": role, "content": [part]}]}
    status, resp = post_json(port, "/v1/responses/render", body)
    assert_clean(status, resp, repr(part))
    assert status == 400, resp
