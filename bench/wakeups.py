"""What a cross-core round trip costs each server: CPU per request with the client on the other
core and on the server's own core.

    python bench/wakeups.py [--only "100 tok, new text"] [--seconds 3] [--peers vllm-rs]

Each server is pinned to CPU 0 and loaded by wrk (1 thread, 2 connections) pinned first to the
last CPU, then to CPU 0 beside it. With the client on another core every answer wakes it there
with an inter-processor interrupt (counted from ``/proc/interrupts`` per request); on a guest
where that is a costly exit, the server's CPU per request rises with it. On the same core the
client costs the server its time slices but no wake-up crosses cores, so the difference between
the two rows is the cross-core cost, and the same-core CPU per request is the server's own work.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402
from workloads import build  # noqa: E402

_KINDS = ("CAL", "RES")  # function-call and rescheduling interrupts: the wake-ups between cores


def interrupts() -> dict[str, list[int]]:
    counts = {}
    for line in Path("/proc/interrupts").read_text().splitlines():
        fields = line.split()
        if fields and fields[0].rstrip(":") in _KINDS:
            counts[fields[0].rstrip(":")] = [int(x) for x in fields[1 : 1 + (os.cpu_count() or 1)]]
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", default="100 tok, new text")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--peers", default="vllm-rs", help="comma list: vllm-rs (when installed)")
    args = ap.parse_args()
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(run.MODEL / "tokenizer.json"))
    servers = [run.tokenbridge_server("w1")]
    if "vllm-rs" in args.peers.split(",") and run.VLLM_RS.exists():
        servers.append(run.vllm_rs_server())
    other = str((os.cpu_count() or 1) - 1)
    tmp = Path(tempfile.mkdtemp(prefix="tokenbridge-wakeups-"))
    print(f"{'server':8s} {'workload':28s} {'client on':10s} {'req/s':>8s} {'CPU us/req':>10s} {'IPIs/req':>8s}")
    workloads = None
    for server in servers:
        run.start(server, pin=True)
        try:
            time.sleep(2)
            if workloads is None:  # the first server is tokenbridge: its renders build the bodies
                workloads = build(tok, run.SERVED_NAME, lambda p, b: run.post(server.port, p, b))
            for wl in (w for w in workloads if args.only in w.name and run.route_of(server, w.path)):
                for cpus, where in ((other, f"CPU {other}"), ("0", "CPU 0")):
                    before = interrupts()
                    r = run.run_wrk(server, wl, tmp, args.seconds, 2, cpus)
                    after = interrupts()
                    ipis = sum(after[k][int(cpus)] - before[k][int(cpus)] for k in after) / max(r["requests"], 1)
                    print(f"{server.name:8s} {wl.name[:28]:28s} {where:10s} {r['req_s']:8.0f} {r['cpu_us']:10.1f} "
                          f"{ipis:8.2f}", flush=True)
        finally:
            run.stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
