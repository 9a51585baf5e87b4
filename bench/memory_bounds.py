"""Memory a client can make the server hold: RSS before and after hostile requests.

    python bench/memory_bounds.py --port P --pid PID [--oov-ids 2400000] [--tokenize-mib 8]
        [--phases oov,tokenize,words] [--words 3000000]

``PID`` is the serving process (with ``--workers 1``, the server itself). The measurements
(``--phases``, default ``oov,tokenize``):

- ``oov``: ``--oov-ids`` distinct token ids past the tokenizer's vocabulary, 8,000 per request,
  spread over ``/detokenize``, chat and completion derender (one-shot and streamed) and
  logprobs. RSS is read before and after.
- ``tokenize``: one ``/tokenize`` of ``--tokenize-mib`` MiB of new text (random words), then
  RSS after the answer, and 2 s later.
- ``words``: ``--words`` random words, ~30 KB of them per chat render (every render server has
  the route: run it against vllm-rs too), RSS read as they go. An encoder's per-word caches
  grow with the distinct words it has seen; this shows whether and where they stop.

Loopback only; a bounded number of requests.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import time

M = "Qwen/Qwen3-8B"
FIRST_OOV = 151669  # qwen3's tokenizer has ids below this
BATCH = 8000


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def post(conn: http.client.HTTPConnection, path: str, body) -> int:
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = conn.getresponse()
    r.read()
    return r.status


def oov_bodies(ids: list[int]):
    chat = {"model": M, "messages": [{"role": "user", "content": "hi"}]}
    lp = [{"token_id": i, "logprob": -1.0, "top_logprobs": []} for i in ids[:50]]
    yield "/detokenize", {"model": M, "tokens": ids}
    yield "/v1/chat/completions/derender", {
        "model": M, "generate_response": {"choices": [{"index": 0, "token_ids": ids}]},
        "prompt_token_ids": [9707], "chat_request": chat,
    }  # fmt: skip
    yield "/v1/completions/derender", {
        "model": M, "stream": True, "generate_chunk": {"choices": [{"index": 0, "token_ids": ids}]},
        "prompt_tokens": 1, "completion_request": {"model": M, "prompt": "hi"},
    }  # fmt: skip
    yield "/v1/chat/completions/derender", {
        "model": M,
        "generate_response": {"choices": [{"index": 0, "token_ids": [9707] * len(lp), "logprobs": {"content": lp}}]},
        "prompt_token_ids": [9707], "chat_request": chat,
    }  # fmt: skip


def measure_oov(port: int, pid: int, total: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    before = rss_mb(pid)
    statuses: dict[int, int] = {}
    next_id = FIRST_OOV
    sent = 0
    while sent < total:
        ids = list(range(next_id, next_id + BATCH))
        next_id += BATCH
        sent += BATCH
        for path, body in oov_bodies(ids):
            s = post(conn, path, body)
            statuses[s] = statuses.get(s, 0) + 1
    return {"distinct_ids": sent, "rss_before_mb": round(before, 1), "rss_after_mb": round(rss_mb(pid), 1),
            "growth_mb": round(rss_mb(pid) - before, 1), "statuses": statuses}


def measure_tokenize(port: int, pid: int, mib: int) -> dict:
    rng = random.Random(14)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(5000)]
    parts, size = [], 0
    while size < mib << 20:
        w = rng.choice(words)
        parts.append(w)
        size += len(w) + 1
    text = " ".join(parts)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    before = rss_mb(pid)
    t0 = time.monotonic()
    status = post(conn, "/tokenize", {"model": M, "prompt": text})
    took = time.monotonic() - t0
    after = rss_mb(pid)
    time.sleep(2)
    settled = rss_mb(pid)
    return {"body_mib": round(len(text) / 2**20, 2), "status": status, "seconds": round(took, 2),
            "rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1),
            "rss_after_2s_mb": round(settled, 1), "above_start_mb": round(settled - before, 1)}


def measure_words(port: int, pid: int, total: int, model: str) -> dict:
    rng = random.Random(17)
    letters = "abcdefghijklmnopqrstuvwxyz"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    warm = {"model": model, "messages": [{"role": "user", "content": "warm up"}]}
    post(conn, "/v1/chat/completions/render", warm)
    before = rss_mb(pid)
    readings, statuses, sent = {}, {}, 0
    marks = [m for m in (total // 6, total // 3, total * 2 // 3, total) if m]
    for mark in marks:
        while sent < mark:
            # Mostly short words (the encoder's inline cache), one in ten longer than 15 bytes.
            words = ["".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(3000)]
            words += ["".join(rng.choice(letters) for _ in range(20)) for _ in range(300)]
            body = {"model": model, "messages": [{"role": "user", "content": " ".join(words)}]}
            s = post(conn, "/v1/chat/completions/render", body)
            statuses[s] = statuses.get(s, 0) + 1
            sent += len(words)
        time.sleep(0.5)
        readings[sent] = round(rss_mb(pid), 1)
    return {"rss_before_mb": round(before, 1), "rss_mb_after_words": readings,
            "growth_mb": round(rss_mb(pid) - before, 1), "statuses": statuses}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--phases", default="oov,tokenize", help="comma list of oov, tokenize, words")
    ap.add_argument("--oov-ids", type=int, default=2_400_000)
    ap.add_argument("--tokenize-mib", type=int, default=8)
    ap.add_argument("--words", type=int, default=3_000_000)
    ap.add_argument("--model", default=M, help="the served model name")
    a = ap.parse_args()
    phases = a.phases.split(",")
    out = {}
    if "oov" in phases:
        out["oov"] = measure_oov(a.port, a.pid, a.oov_ids)
    if "tokenize" in phases:
        out["tokenize"] = measure_tokenize(a.port, a.pid, a.tokenize_mib)
    if "words" in phases:
        out["words"] = measure_words(a.port, a.pid, a.words, a.model)
    print(json.dumps(out, indent=1))
