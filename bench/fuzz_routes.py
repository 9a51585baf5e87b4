"""A long, seeded, bounded fuzz run: mutated corpus requests on every route of a running server.

    python bench/fuzz_routes.py --port P [--served-name Qwen/Qwen3-8B] [--requests 100000]
        [--seed 14] [--threads 4] [--timeout 30]

Each request is a recorded request of the public corpus (any profile, addressed to
``--served-name``) with ``tests/server/corpus_mutations.py``'s edits: 80% edits of the JSON,
10% damaged bytes, 5% other content types, 5% GET routes and wrong methods. Every answer must
arrive within ``--timeout`` (else it counts as a hang), must not be a 5xx, and must be vLLM's
error envelope when it is an error. Prints the counts by status and the first failures; exits
1 if there was any. Loopback only; it stops after ``--requests``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.server import corpus_mutations as cm  # noqa: E402

PARITY = ROOT.parent / "shared" / "parity"


def one_request(rng: random.Random, corpus) -> tuple[str, str, bytes | None, str | None]:
    """(method, path, body, content type) of one hostile request."""
    roll = rng.random()
    path, body = rng.choice(corpus)
    if roll < 0.80:
        return "POST", path, cm.encode(cm.mutate(rng, body)), "application/json"
    if roll < 0.90:
        return "POST", path, cm.raw_mutation(rng, cm.encode(body)), "application/json"
    if roll < 0.95:
        ctype = rng.choice(["text/plain", "application/json; charset=latin-1", "", "application/x-www-form-urlencoded"])
        return "POST", path, cm.encode(body), ctype or None
    method = rng.choice(["GET", "HEAD", "PUT", "DELETE", "POST"])
    return method, rng.choice(cm.GET_PATHS + cm.ROUTES), None, None


def worker(port: int, corpus, seed: int, count: int, timeout: float, stats: Counter, failures: list, lock) -> None:
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    for _ in range(count):
        method, path, body, ctype = one_request(rng, corpus)
        headers = {"content-type": ctype} if ctype else {}
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            payload = r.read()
            status = r.status
            problem = cm.check_answer(status, payload, method, path)
            if r.getheader("connection", "").lower() == "close":
                conn.close()
        except TimeoutError:
            status, problem = "hang", f"no answer in {timeout} s"
            conn.close()
        except (ConnectionError, http.client.HTTPException) as e:
            status, problem = "closed", None  # the server may close after an error; reconnect
            conn.close()
            _ = e
        with lock:
            stats[status] += 1
            if problem is not None and len(failures) < 20:
                failures.append({"method": method, "path": path, "body": (body or b"")[:400].decode("utf-8", "replace"),
                                 "problem": problem})
            elif problem is not None:
                stats["failures_not_shown"] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--served-name", default="Qwen/Qwen3-8B")
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()
    corpus = cm.corpus_requests(PARITY, a.served_name)
    stats: Counter = Counter()
    failures: list = []
    lock = threading.Lock()
    per = a.requests // a.threads
    t0 = time.monotonic()
    threads = [
        threading.Thread(target=worker, args=(a.port, corpus, a.seed * 1000 + i, per, a.timeout, stats, failures, lock))
        for i in range(a.threads)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=5)
    conn.request("GET", "/health")
    healthy = conn.getresponse().status == 200
    n5xx = sum(v for k, v in stats.items() if isinstance(k, int) and k >= 500)
    report = {
        "requests": per * a.threads, "seed": a.seed, "threads": a.threads, "corpus_requests": len(corpus),
        "seconds": round(time.monotonic() - t0, 1), "status_counts": {str(k): v for k, v in sorted(stats.items(), key=str)},
        "5xx": n5xx, "hangs": stats.get("hang", 0), "healthy_after": healthy, "failures": failures,
    }
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 0 if not failures and healthy else 1


if __name__ == "__main__":
    sys.exit(main())
