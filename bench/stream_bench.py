"""Streaming derender cost: a 2,000-token qwen3 reasoning + tool-call output, one token per call.

    python bench/stream_bench.py --port P [--oracle-port Q] [--tokens 2000] [--turns 25]

Both servers must serve the qwen3 profile (hermes tool parser, qwen3 reasoning parser):
    tokenbridge serve shared/models/qwen3 --port P --served-model-name Qwen/Qwen3-8B \
        --tool-call-parser hermes --enable-auto-tool-choice --reasoning-parser qwen3 --max-model-len 8192
    VLLM_TARGET_DEVICE=cpu shared/oracle/serve.sh profile qwen3 Q

The output is realistic text tokenized with the model's own tokenizer. Each call goes over one
keep-alive connection and carries the ``stream_state`` the previous call returned, as a
streaming client does. Reported per server: whole-stream time, mean call time over the first
and the last 200 calls, and the size of the first and the last request body. The accumulated
stream is checked against the server's own one-shot answer.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
TOKENIZER = SHARED / "models" / "qwen3" / "tokenizer.json"
WINDOW = 200

_REASONING = [
    "The user wants the current weather in Zürich, and they mentioned they are travelling tomorrow,",
    "so a forecast might matter more than the current conditions. I should check which tools exist.",
    "There is get_weather with parameters city and unit, and get_forecast with city and days.",
    "Temperatures in Switzerland are usually given in °C, so the unit should be celsius unless",
    "the user asked otherwise — they did not. Let me also consider whether the city name needs",
    "normalising: \"Zürich\" with an umlaut is the canonical spelling, but some APIs expect",
    "\"Zurich\". The tool description does not say, so I will pass the name as the user wrote it.",
    "If the call fails I can retry with the ASCII spelling. Another consideration is the time zone:",
    "Europe/Zurich is UTC+1 in winter, which matters if the answer mentions \"this evening\".",
    "I could call both tools in parallel, but the user's question is primarily about the weather",
    "right now; the forecast can come in a follow-up if they ask. Keep the answer short and",
    "practical: temperature, precipitation, wind, and one sentence of advice (umbrella or not).",
]
_TOOL_CALL = {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius", "include": ["temperature", "precipitation", "wind"]}}
_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"},
                                                      "include": {"type": "array", "items": {"type": "string"}}},
                    "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_forecast", "description": "Forecast for a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"]}}},
]
_MESSAGES = [{"role": "user", "content": "What's the weather like in Zürich right now? I'm travelling tomorrow."}]


def conversation(turns: int) -> list[dict]:
    """``_MESSAGES`` after ``turns`` earlier turns (a question, a call, its result, an answer;
    ~300 tokens each): every chunk of a stream carries the whole conversation."""
    history = []
    for i in range(turns):
        city = ["Geneva", "Basel", "Bern", "Lugano"][i % 4]
        history += [
            {"role": "user", "content": f"Turn {i}: how is the weather in {city}? " + " ".join(_REASONING[:3])},
            {"role": "assistant", "content": "", "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"city": city, "unit": "celsius"})}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": json.dumps(
                {"city": city, "temperature": 4 + i % 9, "precipitation": "light rain", "wind": "12 km/h NW"})},
            {"role": "assistant", "content": f"In {city} it is {4 + i % 9} °C with light rain. " + _REASONING[4 + i % 6]},
        ]
    return history + _MESSAGES


def build_output(n_tokens: int) -> list[int]:
    """``<think>…</think>\\n\\n<tool_call>\\n{…}\\n</tool_call>`` + ``<|im_end|>``, n_tokens long."""
    # The client must not keep tokenizer worker threads spinning beside the server.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    tail = tok.encode("</think>\n\n<tool_call>\n" + json.dumps(_TOOL_CALL, ensure_ascii=False) + "\n</tool_call>").ids
    end = tok.token_to_id("<|im_end|>")
    head = tok.encode("<think>\n").ids
    body: list[int] = []
    i = 0
    budget = n_tokens - len(head) - len(tail) - 1
    while len(body) < budget:
        body += tok.encode(" " + _REASONING[i % len(_REASONING)] if body else _REASONING[0]).ids
        i += 1
    return head + body[:budget] + tail + [end]


class Server:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.name = self.get("/v1/models")["data"][0]["id"]

    def get(self, path: str) -> dict:
        self.conn.request("GET", path)
        return json.loads(self.conn.getresponse().read())

    def post(self, path: str, payload: bytes) -> dict:
        self.conn.request("POST", path, payload, {"content-type": "application/json"})
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise SystemExit(f"{path}: HTTP {r.status}: {body[:300]!r}")
        return json.loads(body)


def run(port: int, output: list[int], label: str, turns: int = 0) -> dict:
    srv = Server(port)
    chat_request = {"model": srv.name, "messages": conversation(turns), "tools": _TOOLS}
    rendered = srv.post("/v1/chat/completions/render", json.dumps(chat_request).encode())
    prompt = rendered["token_ids"]
    base = {"model": srv.name, "stream": True, "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
            "chat_request": chat_request}
    state, times, sizes = None, [], []
    content = reasoning = ""
    calls: dict[int, dict] = {}
    finish = None
    t_all = time.perf_counter()
    for k, token in enumerate(output):
        last = k == len(output) - 1
        chunk = {"request_id": "chatcmpl-bench",
                 "choices": [{"index": 0, "token_ids": [token], "finish_reason": "stop" if last else None}]}
        payload = json.dumps(dict(base, generate_chunk=chunk, stream_state=state)).encode()
        t0 = time.perf_counter()
        resp = srv.post("/v1/chat/completions/derender", payload)
        times.append(time.perf_counter() - t0)
        sizes.append(len(payload))
        state = resp["stream_state"]
        for ch in resp["chunk"]["choices"]:
            d = ch["delta"]
            content += d.get("content") or ""
            reasoning += d.get("reasoning") or ""
            for tc in d.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], {"name": "", "arguments": ""})
                c["name"] += tc["function"].get("name") or ""
                c["arguments"] += tc["function"].get("arguments") or ""
            finish = ch["finish_reason"] or finish
    total = time.perf_counter() - t_all

    oneshot = srv.post("/v1/chat/completions/derender", json.dumps(dict(
        base, stream=False, generate_response={"request_id": "chatcmpl-bench", "prompt_token_ids": prompt,
                                               "choices": [{"index": 0, "token_ids": output, "finish_reason": "stop"}]})).encode())
    msg = oneshot["choices"][0]["message"]
    want_calls = [(t["function"]["name"], json.loads(t["function"]["arguments"])) for t in msg.get("tool_calls") or []]
    got_calls = [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]
    same = (content == (msg["content"] or "") and reasoning == (msg["reasoning"] or "")
            and got_calls == want_calls and finish == oneshot["choices"][0]["finish_reason"])
    first = sum(times[:WINDOW]) / WINDOW * 1000
    last_ = sum(times[-WINDOW:]) / WINDOW * 1000
    med_first = statistics.median(times[:WINDOW]) * 1000
    med_last = statistics.median(times[-WINDOW:]) * 1000
    print(f"{label}: {len(output)} calls in {total:.2f} s; mean call first {WINDOW} {first:.2f} ms, "
          f"last {WINDOW} {last_:.2f} ms (x{last_ / first:.2f}); median {med_first:.2f} / {med_last:.2f} ms; "
          f"request first {sizes[0]} B, "
          f"last {sizes[-1]} B, max {max(sizes)} B; stream == one-shot: {same} "
          f"({len(got_calls)} tool call(s), finish_reason {finish})")
    return {"total": total, "first_ms": first, "last_ms": last_, "first_bytes": sizes[0],
            "last_bytes": sizes[-1], "max_bytes": max(sizes), "same_as_oneshot": same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True, help="a running tokenbridge server (qwen3 profile)")
    ap.add_argument("--oracle-port", type=int, help="a running vLLM 0.33 render server (qwen3 profile)")
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--turns", type=int, default=0,
                    help="earlier turns before the question (~300 tokens each): what every chunk carries")
    args = ap.parse_args()
    output = build_output(args.tokens)
    ours = run(args.port, output, "tokenbridge", args.turns)
    if args.oracle_port:
        theirs = run(args.oracle_port, output, "vLLM 0.33", args.turns)
        print(f"whole stream: vLLM {theirs['total']:.2f} s / tokenbridge {ours['total']:.2f} s "
              f"= {theirs['total'] / ours['total']:.1f}x")


if __name__ == "__main__":
    main()
