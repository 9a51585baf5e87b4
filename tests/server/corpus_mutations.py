"""Hostile variants of the public corpus's requests, and the check every answer must pass.

Shared by ``test_fuzz_corpus.py`` (hypothesis, bounded, in CI) and ``bench/fuzz_routes.py``
(a long seeded run). A mutation starts from a recorded request of any route and applies a
few edits: a value anywhere in the body replaced by a wrong type, an extreme number, hostile
text (lone surrogates, NUL, huge strings) or deep nesting; a key deleted or added; a list
emptied, repeated or wrapped; or the raw bytes cut, spliced or given a raw surrogate. The
answer must come in time, never be a 5xx, and be vLLM's envelope when it is an error.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

SHARED_CASES = "cases"
# Served names of the profile the mutations are sent to (the corpus's other profiles are
# rewritten to it, so their bodies reach the handlers instead of stopping at a 404).
DELETE = object()
EXTREME_NUMBERS = [0, -1, 1, 2**31, 2**63, 2**64 + 1, -(2**63) - 1, 10**30, 1e308, -1e308, 0.5, -0.0]
HOSTILE_TEXT = [
    "", " ", "\x00", "\ud800", "\udfff", "a\ud83d", "\U0001f600" * 50, "<|im_start|>", "<|im_end|>",
    "</think>", "<tool_call>", "{{ raise_exception('x') }}", "{%", "%s%n", "\u202e", "x" * 100_000,
    "null", "true", "[]", "{}", "0", "-1", "1e999", "NaN",
]  # fmt: skip
WRONG_TYPES = [None, True, False, {}, [], [None], {"": None}, [[[]]], "x", 1, 1.5]
ROUTES = (
    "/v1/chat/completions/render", "/v1/completions/render", "/v1/messages/render", "/v1/responses/render",
    "/v1/chat/completions/derender", "/v1/completions/derender", "/tokenize", "/detokenize",
)  # fmt: skip
GET_PATHS = ("/health", "/ping", "/v1/models", "/version", "/load", "/metrics", "/kv_event_sources", "/nope")


def corpus_requests(parity: Path, served_name: str) -> list[tuple[str, Any]]:
    """Every recorded POST request of every profile (a stream's first step for streams),
    addressed to ``served_name``."""
    out = []
    for path in sorted((parity / SHARED_CASES).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if "request" in case:
                req = case["request"]
                if req.get("method") == "POST" and "body" in req:
                    out.append((req["path"], _rename_models(req["body"], served_name)))
            elif case.get("steps"):
                route = _STREAM_ROUTES.get(case["kind"])
                if route is not None:
                    body = {**case["request_base"], **{k: v for k, v in case["steps"][0].items() if k != "response"}}
                    out.append((route, _rename_models({**body, "stream_state": None}, served_name)))
    chats = [b for p, b in out if p == "/v1/chat/completions/render" and isinstance(b, dict)]
    out += [("/v1/messages/render", m) for m in map(_as_messages, chats) if m is not None]
    out += [("/v1/responses/render", r) for r in map(_as_responses, chats) if r is not None]
    return out


def _text_turns(chat: dict) -> tuple[str | None, list[dict]]:
    system, turns = None, []
    for m in chat.get("messages") or []:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            continue
        if m.get("role") == "system":
            system = m["content"]
        elif m.get("role") in ("user", "assistant"):
            turns.append({"role": m["role"], "content": m["content"]})
    return system, turns


def _as_messages(chat: dict) -> dict | None:
    """A chat request's text turns as an Anthropic Messages request (the corpus has none)."""
    system, turns = _text_turns(chat)
    if not turns:
        return None
    body = {"model": chat.get("model"), "max_tokens": chat.get("max_tokens") or 64, "messages": turns}
    if system is not None:
        body["system"] = system
    return body


def _as_responses(chat: dict) -> dict | None:
    """A chat request's text turns as a Responses request (the corpus has none)."""
    system, turns = _text_turns(chat)
    if not turns:
        return None
    body = {"model": chat.get("model"), "input": turns}
    if system is not None:
        body["instructions"] = system
    return body


_STREAM_ROUTES = {
    "chat_derender_stream": "/v1/chat/completions/derender",
    "completion_derender_stream": "/v1/completions/derender",
}


def _rename_models(v: Any, name: str) -> Any:
    if isinstance(v, dict):
        return {k: (name if k == "model" and isinstance(x, str) else _rename_models(x, name)) for k, x in v.items()}
    if isinstance(v, list):
        return [_rename_models(x, name) for x in v]
    return v


def _slots(v: Any, path: tuple = ()) -> list[tuple]:
    """Every place in ``v`` a value sits (dict keys, list indexes), with the root as ``()``."""
    out = [path]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _slots(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v[:8]):
            out += _slots(x, path + (i,))
    return out


def _get(v: Any, path: tuple) -> Any:
    for k in path:
        v = v[k]
    return v


def _set(root: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = _get(root, path[:-1])
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return root


def _nested(depth: int) -> Any:
    v: Any = 1
    for i in range(depth):
        v = [v] if i % 2 else {"a": v}
    return v


def _wrong_type(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(WRONG_TYPES))  # later edits must not change the constant


def _new_value(rng: random.Random, old: Any) -> Any:
    kind = rng.randrange(9)
    if kind == 0:
        return _wrong_type(rng)
    if kind == 1:
        return rng.choice(EXTREME_NUMBERS)
    if kind == 2:
        return rng.choice(HOSTILE_TEXT)
    if kind == 3:
        return _nested(rng.choice([10, 100, 400]))
    if kind == 4 and isinstance(old, list):
        return old * rng.choice([0, 2, 50])
    if kind == 5:
        return [old]
    if kind == 6 and isinstance(old, (int, float)) and not isinstance(old, bool):
        return old + rng.choice([-1, 1]) * rng.choice([1, 1000, 2**40])
    if kind == 7 and isinstance(old, str):
        cut = rng.randrange(len(old) + 1)
        return old[:cut] + rng.choice(HOSTILE_TEXT[:12]) + old[cut:]
    return DELETE


def mutate(rng: random.Random, body: Any, edits: int | None = None) -> Any:
    """``body`` (deep-copied) with 1-4 random edits anywhere in it."""
    body = json.loads(json.dumps(body))
    for _ in range(edits or rng.randint(1, 4)):
        slots = _slots(body)
        path = rng.choice(slots)
        if rng.random() < 0.15 and isinstance(_get(body, path), dict):
            value = _new_value(rng, None) if rng.random() < 0.5 else _wrong_type(rng)
            if value is not DELETE:
                _get(body, path)[rng.choice(["stream", "n", "tools", "x", "logprobs", "stream_state", "prompt"])] = value
            continue
        value = _new_value(rng, _get(body, path))
        if value is DELETE and not path:
            continue
        body = _set(body, path, value)
    return body


def raw_mutation(rng: random.Random, raw: bytes) -> bytes:
    """Byte-level damage to a JSON body."""
    kind = rng.randrange(5)
    at = rng.randrange(len(raw) + 1)
    if kind == 0:
        return raw[:at]
    if kind == 1:
        return raw[:at] + b"\xed\xa0\x80" + raw[at:]  # a raw lone surrogate
    if kind == 2:
        return raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1 :]
    if kind == 3:
        return raw[:at] + raw[at:][::-1]
    return raw[:at] + b"\xff\xfe" + raw[at:]


def encode(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")


def check_answer(status: int, payload: bytes, method: str = "POST", path: str = "") -> str | None:
    """None when the answer is acceptable, else what is wrong with it."""
    if status >= 500:
        return f"{status}: {payload[:300]!r}"
    if method == "HEAD":
        return None if payload == b"" else f"HEAD answered with a body: {payload[:80]!r}"
    if status < 400:
        if payload and path != "/metrics":  # Prometheus text
            try:
                json.loads(payload)
            except ValueError:
                return f"{status} with a body that is not JSON: {payload[:120]!r}"
        return None
    try:
        body = json.loads(payload)
    except ValueError:
        return f"{status} with a body that is not JSON: {payload[:120]!r}"
    if isinstance(body, dict) and set(body) == {"detail"} and status in (400, 404, 405):
        return None  # FastAPI's answer, as vLLM's: unknown route, wrong method, unparsable body
    if not (isinstance(body, dict) and set(body) == {"error"} and isinstance(body["error"], dict)):
        return f"{status} outside the error envelope: {payload[:200]!r}"
    err = body["error"]
    if set(err) != {"message", "type", "param", "code"} or err["code"] != status:
        return f"{status} with a malformed error: {err!r:.200}"
    if not (isinstance(err["message"], str) and err["message"] and isinstance(err["type"], str)):
        return f"{status} with an empty message or type: {err!r:.200}"
    return None
