"""Derender outputs where tokenbridge once differed from vLLM 0.33 (found by differential
fuzzing against the real oracle): the one-shot answer equals vLLM's, and streaming the same
output one token per call accumulates to it."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import WHOLE, replay

DATA = json.loads((Path(__file__).parent / "data" / "derender_vllm_diff.json").read_text())
BY_PROFILE: dict[str, list[dict]] = defaultdict(list)
for _case in DATA["cases"]:
    BY_PROFILE[_case["profile"]].append(_case)


def _stream_one_token(port: int, case: dict) -> tuple[str | None, list[dict]]:
    body = case["body"]
    chat = case["path"].startswith("/v1/chat")
    key = "generate_response" if chat else "generate_responses"
    gens = [body[key]] if chat else body[key]
    chunks, state = [], None
    for gen in gens:
        longest = max(len(c["token_ids"]) for c in gen["choices"])
        for i in range(longest):
            choices = []
            for c in gen["choices"]:
                if i >= len(c["token_ids"]):
                    continue
                last = i == len(c["token_ids"]) - 1
                ch = {"index": c["index"], "token_ids": c["token_ids"][i:i + 1],
                      "finish_reason": c["finish_reason"] if last else None,
                      "stop_reason": c.get("stop_reason") if last else None}
                if c.get("logprobs"):
                    ch["logprobs"] = {"content": c["logprobs"]["content"][i:i + 1]}
                choices.append(ch)
            req = {k: v for k, v in body.items() if k not in (key,)}
            req.update(stream=True, generate_chunk={"request_id": gen["request_id"], "choices": choices},
                       stream_state=state)
            status, out = replay.http(port, "POST", case["path"], req)
            if status != 200:
                return f"stream step {i}: status {status}: {str(out)[:200]}", chunks
            chunks.append(out["chunk"])
            state = out.get("stream_state")
    return None, chunks


@pytest.mark.parametrize("profile", sorted(BY_PROFILE))
def test_derender_diff_cases(servers, profile):
    """Streams are compared with the one-shot answer, so calls stream whole."""
    port = servers.port(profile, WHOLE)
    failures = []
    for n, case in enumerate(BY_PROFILE[profile]):
        status, body = replay.http(port, "POST", case["path"], case["body"])
        err = replay.compare_response(case["expected"], status, body)
        if err:
            failures.append(f"#{n} one-shot: {err}")
            continue
        cr = case["body"].get("chat_request") or {}
        if (case["expected"]["status"] != 200 or case["path"].startswith("/v1/completions")
                or len(case["body"]["generate_response"]["choices"]) > 1 or cr.get("stop")):
            continue  # streaming derender takes one choice per chunk and no stop strings
        err, chunks = _stream_one_token(port, case)
        if err is None:
            err = replay.same_result(replay.accumulate(chunks), replay.fold(case["expected"]["body"]))
        if err:
            failures.append(f"#{n} stream: {err}")
    assert not failures, "\n".join(failures[:10])
