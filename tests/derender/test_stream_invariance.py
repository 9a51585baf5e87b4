"""A stream accumulates to our own one-shot answer, however the output is chunked.

Every derender output in the public corpus (one-shot cases and the outputs of the stream
cases) is sent to a real server one-shot, then streamed one token per call, three per call,
in random cuts and all at once, each call carrying the state the previous one returned.
This holds whether or not a profile's parsers already match vLLM exactly: for every output
with ``--tool-call-streaming whole``, and for every well-formed output with ``incremental``
(the default), where a malformed or truncated one gets the same answer for every chunking.
"""

from __future__ import annotations

import http.client
import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import INCREMENTAL, PROFILES, WHOLE, corpus_cases, malformed_case_ids, streams_incrementally

CHAT_PATH = "/v1/chat/completions/derender"
COMPLETION_PATH = "/v1/completions/derender"


class Client:
    """One keep-alive connection, as a streaming client would hold."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        try:
            return self._post(path, body)
        except (ConnectionError, http.client.HTTPException):  # the server closed an idle connection
            self.conn.close()
            return self._post(path, body)

    def _post(self, path: str, body: dict) -> tuple[int, dict]:
        self.conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, json.loads(raw) if raw else None


def spans(n: int, chunking: str, rng: random.Random) -> list[tuple[int, int]]:
    if chunking == "whole" or n == 0:
        return [(0, n)]
    if chunking == "random":
        cuts = sorted(rng.sample(range(1, n), min(n - 1, rng.randint(0, 6)))) if n > 1 else []
    else:
        step = 1 if chunking == "one_token" else 3
        cuts = list(range(step, n, step))
    return list(zip([0, *cuts], [*cuts, n]))


def stream_choice(client: Client, path: str, base: dict, request_id: str, choice: dict, cuts) -> list[dict]:
    ids = choice["token_ids"]
    lp = (choice.get("logprobs") or {}).get("content")
    chunks, state = [], None
    for k, (a, b) in enumerate(cuts):
        last = k == len(cuts) - 1
        part = {
            "index": choice["index"],
            "token_ids": ids[a:b],
            "finish_reason": choice.get("finish_reason", "stop") if last else None,
            "stop_reason": choice.get("stop_reason") if last else None,
        }
        if lp is not None:
            part["logprobs"] = {"content": lp[a:b]}
        body = dict(base, stream=True, stream_state=state,
                    generate_chunk={"request_id": request_id, "choices": [part]})
        status, resp = client.post(path, body)
        assert status == 200, (k, resp)
        chunks.append(resp["chunk"])
        state = resp["stream_state"]
    return chunks


def folded_stream(chunks: list[dict]) -> dict:
    out = {"content": "", "reasoning": "", "text": "", "calls": {}, "finish_reason": None, "logprobs": None}
    for chunk in chunks:
        for ch in chunk["choices"]:
            if "delta" in ch:
                d = ch["delta"]
                out["content"] += d.get("content") or ""
                out["reasoning"] += d.get("reasoning") or ""
                for tc in d.get("tool_calls") or []:
                    call = out["calls"].setdefault(tc["index"], {"name": "", "arguments": ""})
                    call["name"] += tc["function"].get("name") or ""
                    call["arguments"] += tc["function"].get("arguments") or ""
                lp = (ch.get("logprobs") or {}).get("content")
            else:
                out["text"] += ch["text"]
                lp = (ch.get("logprobs") or {}).get("tokens")
            if lp is not None:
                out["logprobs"] = (out["logprobs"] or []) + lp
            if ch["finish_reason"]:
                out["finish_reason"] = ch["finish_reason"]
    out["calls"] = [out["calls"][i] for i in sorted(out["calls"])]
    return out


def folded_oneshot(choice: dict) -> dict:
    if "message" in choice:
        m = choice["message"]
        lp = (choice.get("logprobs") or {}).get("content")
        return {
            "content": m.get("content") or "",
            "reasoning": m.get("reasoning") or "",
            "text": "",
            "calls": [{"name": t["function"]["name"], "arguments": t["function"]["arguments"]}
                      for t in m.get("tool_calls") or []],
            "finish_reason": choice["finish_reason"],
            "logprobs": lp,
        }
    return {"content": "", "reasoning": "", "text": choice["text"], "calls": [],
            "finish_reason": choice["finish_reason"], "logprobs": (choice.get("logprobs") or {}).get("tokens")}


# -------------------------------------------------------------------------- corpus outputs


def _merged_choices(steps: list[dict]) -> list[dict]:
    by_index: dict[int, dict] = {}
    for step in steps:
        for c in step["generate_chunk"].get("choices") or []:
            m = by_index.setdefault(c["index"], {"index": c["index"], "token_ids": [], "finish_reason": None})
            m["token_ids"] += c.get("token_ids") or []
            if c.get("logprobs") is not None:
                m.setdefault("logprobs", {"content": []})["content"] += c["logprobs"]["content"] or []
            if c.get("finish_reason"):
                m["finish_reason"], m["stop_reason"] = c["finish_reason"], c.get("stop_reason")
    return [by_index[i] for i in sorted(by_index)]


def chat_outputs(profile: str) -> list[tuple[str, dict, dict]]:
    """(case id, stream request base, one-shot body) for every chat output, once each."""
    parsed = bool(PROFILES[profile].get("tool_parser") or PROFILES[profile].get("reasoning_parser"))
    seen, out = set(), []
    for case in corpus_cases(profile, {"chat_derender", "chat_derender_stream"}):
        if case["kind"] == "chat_derender":
            if case["response"]["status"] != 200:
                continue
            body = case["request"]["body"]
            gen = body["generate_response"]
            base = {k: v for k, v in body.items() if k not in ("generate_response", "stream")}
            choices, request_id = gen["choices"], gen.get("request_id", "r")
            prompt = body.get("prompt_token_ids") or gen.get("prompt_token_ids")
        else:
            base = {k: v for k, v in case["request_base"].items() if k != "stream"}
            choices = _merged_choices(case["steps"])
            request_id = case["steps"][0]["generate_chunk"].get("request_id", "r")
            prompt = base.get("prompt_token_ids")
        if (base.get("chat_request") or {}).get("stop") or not choices or any(not c["token_ids"] for c in choices):
            continue
        if parsed and prompt is None:
            continue
        base["prompt_token_ids"] = prompt
        key = json.dumps([base, choices], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        oneshot = dict(base, generate_response={"request_id": request_id, "choices": choices,
                                                "prompt_token_ids": prompt})
        out.append((case["id"], base, oneshot))
    return out


def completion_outputs(profile: str) -> list[tuple[str, dict, dict]]:
    out = []
    for case in corpus_cases(profile, {"completion_derender"}):
        body = case["request"]["body"]
        if case["response"]["status"] != 200 or (body.get("completion_request") or {}).get("stop"):
            continue
        out.append((case["id"], body, body))
    return out


def check_profile(port: int, profile: str, chunkings: list[str], exempt: set[str] = frozenset()) -> list[str]:
    """Differences from the one-shot answer; an ``exempt`` output must instead give one answer
    for every chunking."""
    client = Client(port)
    failures = []
    for case_id, base, oneshot in chat_outputs(profile):
        status, expected = client.post(CHAT_PATH, oneshot)
        assert status == 200, (case_id, expected)
        gen = oneshot["generate_response"]
        for choice, want in zip(gen["choices"], expected["choices"]):
            answers = []
            for chunking in chunkings:
                rng = random.Random(f"{case_id}/{chunking}")
                cuts = spans(len(choice["token_ids"]), chunking, rng)
                answers.append(folded_stream(stream_choice(client, CHAT_PATH, base, gen["request_id"], choice, cuts)))
            for chunking, got in zip(chunkings, answers):
                ref = answers[-1] if case_id in exempt else folded_oneshot(want)
                if got != ref:
                    failures.append(f"{case_id} [{chunking}] choice {choice['index']}: {got} != {ref}")
    for case_id, body, oneshot in completion_outputs(profile):
        status, expected = client.post(COMPLETION_PATH, oneshot)
        assert status == 200, (case_id, expected)
        out_index = 0
        for i, gen in enumerate(body["generate_responses"]):
            prompt_ids = (body.get("prompt_token_ids") or [None] * (i + 1))[i] or gen.get("prompt_token_ids")
            base = {"model": body.get("model"), "completion_request": body.get("completion_request"),
                    "prompt_token_ids": prompt_ids, "prompt_tokens": (body.get("prompt_tokens") or [0] * (i + 1))[i]}
            for choice in gen["choices"]:
                want = folded_oneshot(expected["choices"][out_index])
                out_index += 1
                for chunking in chunkings:
                    rng = random.Random(f"{case_id}/{chunking}")
                    cuts = spans(len(choice["token_ids"]), chunking, rng)
                    got = folded_stream(stream_choice(client, COMPLETION_PATH, base, gen.get("request_id", "r"), choice, cuts))
                    if got != want:
                        failures.append(f"{case_id} [{chunking}] choice {choice['index']}: {got} != {want}")
    return failures


CHUNKINGS = ["one_token", "three", "random", "whole"]


@pytest.fixture(scope="module")
def all_servers(servers):
    """Start every profile's servers at once; most of a server's start is waiting on files."""

    def start(key: tuple[str, str]) -> None:
        try:
            servers.port(*key)
        except RuntimeError:
            pass  # the profile's own test reports it

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(start, [(p, WHOLE) for p in sorted(PROFILES)]
                      + [(p, INCREMENTAL) for p in sorted(PROFILES) if streams_incrementally(p)]))
    return servers


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_corpus_output_streams_whole_calls_to_the_one_shot_answer(all_servers, profile):
    failures = check_profile(all_servers.port(profile, WHOLE), profile, CHUNKINGS)
    assert not failures, f"{len(failures)} streams differ:\n" + "\n".join(f[:600] for f in failures[:8])


@pytest.mark.parametrize("profile", sorted(p for p in PROFILES if streams_incrementally(p)))
def test_every_well_formed_corpus_output_streams_incremental_calls_to_the_one_shot_answer(all_servers, profile):
    failures = check_profile(all_servers.port(profile, INCREMENTAL), profile, CHUNKINGS, malformed_case_ids(profile))
    assert not failures, f"{len(failures)} streams differ:\n" + "\n".join(f[:600] for f in failures[:8])


_RICH = [
    "Let me think: 日本 means Japan 😀 and ∑ is a sum.</think>\n\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "°C"}}\n</tool_call>',
    "Plan: call two tools.</think>\n\nSure — checking.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n'
    '{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}\n</tool_call>',
    "Short.</think>\n\nNo tools needed: 🇫🇷 naïve café.",
]
_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ("get_weather", "get_time")
]


@pytest.fixture(scope="module")
def qwen3_rich_outputs():
    from tokenbridge.model.tokenizer import HFTokenizer
    from conftest import MODELS

    folder = MODELS / "qwen3"
    tok = HFTokenizer(folder, json.loads((folder / "tokenizer_config.json").read_text()))
    end = tok.token_to_id("<|im_end|>")
    prompt = tok.encode("<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n")
    return prompt, [tok.encode(t) + [end] for t in _RICH]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_cut_of_a_reasoning_and_tool_output_gives_the_one_shot_answer(servers, qwen3_rich_outputs, data):
    prompt, outputs = qwen3_rich_outputs
    client = Client(servers.port("qwen3"))
    ids = data.draw(st.sampled_from(outputs))
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(ids) - 1), max_size=12))))
    name = PROFILES["qwen3"]["served_name"]
    base = {"model": name, "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
            "chat_request": {"model": name, "messages": [{"role": "user", "content": "Weather?"}], "tools": _TOOLS}}
    choice = {"index": 0, "token_ids": ids, "finish_reason": "stop"}
    status, expected = client.post(CHAT_PATH, dict(base, generate_response={
        "request_id": "r", "choices": [choice], "prompt_token_ids": prompt}))
    assert status == 200
    got = folded_stream(stream_choice(client, CHAT_PATH, base, "r", choice, list(zip([0, *cuts], [*cuts, len(ids)]))))
    assert got == folded_oneshot(expected["choices"][0])
