"""Profile the hot paths in-process (no HTTP): where a request's CPU time goes.

    python bench/profile_hot.py [--top 15] [--only render]

Builds the qwen3-profile app as ``tokenbridge serve`` does, then runs each route handler on
the bench payloads under cProfile and prints the top functions by own time, plus the share of
the raw tokenizer call in the request.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import MODEL, SERVED_NAME  # noqa: E402
from workloads import SEQ, build  # noqa: E402

from tokenbridge.cli import parse_serve_args  # noqa: E402
from tokenbridge.model import fast_backend  # noqa: E402
from tokenbridge.server.app import POST_ROUTES, Request  # noqa: E402
from tokenbridge.server.run import build as build_app  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--only", default="1k|200 tok")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--tokenizers", action="store_true", help="stay on tokenizers (the fallback backend)")
    args = ap.parse_args()
    serve_args = parse_serve_args([
        str(MODEL), "--served-model-name", SERVED_NAME, "--tool-call-parser", "hermes",
        "--enable-auto-tool-choice", "--reasoning-parser", "qwen3", "--max-model-len", "40960"])
    app = build_app(serve_args)
    if not args.tokenizers:
        print(f"tokenizer backend: {fast_backend.load(app.model.tokenizer)}")

    def render(path: str, body: dict) -> dict:
        return json.loads(call(path, json.dumps(body).encode()))

    def call(path: str, body: bytes) -> bytes:
        result = POST_ROUTES[path](Request(body, {}, app.model, app.cfg))
        return result if isinstance(result, bytes) else msgspec.json.encode(result)

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    wanted = args.only.split("|")
    for wl in build(tok, SERVED_NAME, render):
        if not any(w in wl.name for w in wanted):
            continue
        def body(i: int) -> bytes:
            b = wl.bodies[i % len(wl.bodies)]
            return b.replace(SEQ.encode(), f"p{i}".encode()) if wl.unique else b

        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < args.seconds / 2:
            call(wl.path, body(n))
            n += 1
        per_req = (time.perf_counter() - t0) / n
        raw_t0 = time.perf_counter()
        for _ in range(20):
            wl.raw_op()
        raw = (time.perf_counter() - raw_t0) / 20
        prof = cProfile.Profile()
        prof.enable()
        for i in range(n, 2 * n):
            call(wl.path, body(i))
        prof.disable()
        print(f"\n=== {wl.name}: {per_req * 1e3:.3f} ms/request in-process, raw {wl.raw_label} "
              f"{raw * 1e3:.3f} ms ({raw / per_req:.0%} of the request)")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
