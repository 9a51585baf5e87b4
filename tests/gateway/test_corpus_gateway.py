"""Every one-shot derender case of the corpus, served end to end: the client's request goes to
``/v1/chat/completions`` (or ``/v1/completions``), the stub engine replays the recorded engine
output in random chunks, and the answer must be vLLM's recorded derender answer; streamed, the
chunks must add up to it. Only cases whose recorded prompt ids are the render of their request
apply (the others were sent to derender with ids of another prompt).

Where ``vllm serve`` itself answers otherwise than derender, the expectation follows vllm serve:
``echo`` repeats the prompt, several prompts are one id, and a stop string ends generation at the token that completed it
(derender counted the tokens the engine made after it, which a coordinator never lets it make).

Streams are checked with ``--tool-call-streaming whole`` for every case, and with
``incremental`` for every case the corpus does not label malformed and no stop string cuts
(a stop string may end the output inside a call, which is then truncated).
"""

from __future__ import annotations

import copy

import pytest

from tests.conftest import INCREMENTAL, PROFILES, WHOLE, corpus_cases, malformed_case_ids, replay, streams_incrementally
from tests.gateway.harness import Gateways, sse, stub_engine  # noqa: F401 (fixtures)

KINDS = {"chat_derender", "completion_derender"}


def _applicable(port: int, case: dict) -> tuple[str, dict, list] | None:
    """The client request, the prompt ids it renders to, and the engine outputs; None when the
    case does not apply."""
    body = case["request"]["body"]
    if case["response"]["status"] != 200:
        return None
    if case["kind"] == "chat_derender":
        req = body.get("chat_request")
        if not isinstance(req, dict) or not isinstance(body.get("prompt_token_ids"), list):
            return None
        status, rendered = replay.http(port, "POST", "/v1/chat/completions/render", req)
        if status != 200 or rendered["token_ids"] != body["prompt_token_ids"]:
            return None
        return "/v1/chat/completions", req, [body["generate_response"]["choices"]]
    req = body.get("completion_request")
    if not isinstance(req, dict) or not isinstance(body.get("prompt_token_ids"), list):
        return None
    status, rendered = replay.http(port, "POST", "/v1/completions/render", req)
    if status != 200 or [r["token_ids"] for r in rendered] != body["prompt_token_ids"]:
        return None
    return "/v1/completions", req, [r["choices"] for r in body["generate_responses"]]


def _expected(port: int, case: dict, req: dict, got: dict) -> dict:
    exp = copy.deepcopy(case["response"]["body"])
    body = case["request"]["body"]
    if len(body.get("generate_responses") or ()) > 1:
        exp["id"] = exp["id"].rsplit("-", 1)[0]  # vllm serve names the request, not its first prompt
    for c in exp["choices"]:
        if c.get("text") is not None and req.get("echo"):
            c["text"] = req["prompt"] + c["text"]
    if case["kind"] == "chat_derender" and any(isinstance(c.get("stop_reason"), str) for c in exp["choices"]):
        # vllm serve ends generation at the token completing the stop string and parses only
        # the tokens generated: the derender answer for those tokens. (The recorded derender got
        # every token; a token-based parser, e.g. Harmony's, parses past the cut.)
        done = [c for c in body["generate_response"]["choices"]]
        made = got.get("usage", {}).get("completion_tokens")
        assert isinstance(made, int) and 0 < made <= exp["usage"]["completion_tokens"]
        assert len(done) == 1
        cut = dict(done[0], token_ids=done[0]["token_ids"][:made], finish_reason="stop",
                   stop_reason=exp["choices"][0]["stop_reason"])
        status, exp = replay.http(port, "POST", "/v1/chat/completions/derender", dict(
            body, generate_response=dict(body["generate_response"], choices=[cut], prompt_token_ids=body["prompt_token_ids"])))
        assert status == 200, exp
        exp["usage"]["prompt_tokens"] = len(body["prompt_token_ids"])
        exp["usage"]["total_tokens"] = exp["usage"]["prompt_tokens"] + made
    elif any(isinstance(c.get("stop_reason"), str) for c in exp["choices"]):
        made = got.get("usage", {}).get("completion_tokens")
        assert isinstance(made, int) and 0 < made <= exp["usage"]["completion_tokens"]
        exp["usage"]["completion_tokens"] = made
        exp["usage"]["total_tokens"] = exp["usage"]["prompt_tokens"] + made
    return exp


@pytest.fixture(scope="module")
def gateways(stub_engine):
    g = Gateways(stub_engine, WHOLE)
    yield g
    g.stop()


@pytest.fixture(scope="module")
def incremental_gateways(stub_engine):
    g = Gateways(stub_engine, INCREMENTAL)
    yield g
    g.stop()


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_gateway_answers_the_recorded_derender_answer(gateways, stub_engine, profile):
    check_profile(gateways.port(profile), stub_engine, profile)


@pytest.mark.parametrize("profile", sorted(p for p in PROFILES if streams_incrementally(p)))
def test_gateway_streams_incremental_calls_to_the_recorded_answer(incremental_gateways, stub_engine, profile):
    cut = {c["id"] for c in corpus_cases(profile, KINDS)
           if ((c["request"]["body"].get("chat_request") or c["request"]["body"].get("completion_request") or {})
               .get("stop"))}
    check_profile(incremental_gateways.port(profile), stub_engine, profile, malformed_case_ids(profile) | cut)


def check_profile(port: int, stub_engine, profile: str, stream_exempt: set[str] = frozenset()) -> None:
    """Every applicable case, whole and streamed; a stream of an ``stream_exempt`` case is not
    compared (incremental streaming answers malformed output its documented way)."""
    checked, failures = 0, []
    for case in corpus_cases(profile, KINDS):
        applies = _applicable(port, case)
        if applies is None:
            continue
        path, req, outputs = applies
        stub_engine.control(queue=[list(o) for o in outputs])
        status, got = replay.http(port, "POST", path, dict(req, stream=False))
        err = replay.compare_response({"status": 200, "body": _expected(port, case, req, got)}, status, got) if status == 200 else f"status {status}: {got}"
        if err is None and case["id"] not in stream_exempt:
            stub_engine.control(queue=[list(o) for o in outputs])
            status, events = sse(port, path, dict(req, stream=True))
            if status != 200 or events[-1] != "[DONE]":
                err = f"stream: status {status}, last event {events[-1]!r}"
            else:
                chunks = [e for e in events[:-1]]
                bad = [e for e in chunks if "error" in e]
                err = f"stream error {bad[0]}" if bad else replay.same_result(
                    replay.fold(got, completion=False), replay.accumulate(chunks))
        checked += 1
        if err:
            failures.append(f"{case['id']}: {err}")
    print(f"{profile}: {checked - len(failures)}/{checked} cases equal, streamed and not")
    assert checked > 0
    assert not failures, f"{len(failures)}/{checked} differ:\n" + "\n".join(failures[:10])
