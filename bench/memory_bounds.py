"""Memory a client can make the server hold: RSS before and after hostile requests.

    python bench/memory_bounds.py --port P --pid PID [--oov-ids 2400000] [--tokenize-mib 8]

``PID`` is the serving process (with ``--workers 1``, the server itself). Two measurements:

- ``oov``: ``--oov-ids`` distinct token ids past the tokenizer's vocabulary, 8,000 per request,
  spread over ``/detokenize``, chat and completion derender (one-shot and streamed) and
  logprobs. RSS is read before and after.
- ``tokenize``: one ``/tokenize`` of ``--tokenize-mib`` MiB of new text (random words), then
  RSS after the answer, and 2 s later.

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


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--oov-ids", type=int, default=2_400_000)
    ap.add_argument("--tokenize-mib", type=int, default=8)
    a = ap.parse_args()
    out = {"oov": measure_oov(a.port, a.pid, a.oov_ids), "tokenize": measure_tokenize(a.port, a.pid, a.tokenize_mib)}
    print(json.dumps(out, indent=1))
