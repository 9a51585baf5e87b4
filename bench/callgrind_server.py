"""Instructions per request of the real server, end to end (HTTP parse to socket write).

    python bench/callgrind_server.py [--only "100 tok|1.2k"] [--requests 500] [--port 31500]

Wall-clock throughput on a shared machine is noise; instruction counts are not. This starts
``tokenbridge serve`` (one worker, the bench flags) under ``valgrind --tool=callgrind
--instr-atstart=no``, waits for the fast encoder to serve, and per workload of
``bench/workloads.py``: warms up (a repeated body is memoized from its second render on),
then counts the server's instructions over ``--requests`` requests sent on one keep-alive
connection from this process (``callgrind_control -i on`` / ``-i off`` around them).
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import MAX_MODEL_LEN, MODEL, SERVED_NAME  # noqa: E402
from workloads import SEQ, build  # noqa: E402


def control(*args: str) -> str:
    return subprocess.run(["callgrind_control", *args], check=True, capture_output=True, text=True).stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", default="100 tok|1.2k")
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--port", type=int, default=31500)
    args = ap.parse_args()
    out_dir = Path(tempfile.mkdtemp(prefix="callgrind-server-"))
    exe = Path(sys.executable).with_name("tokenbridge")
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_dir}/cg.out",
           sys.executable, str(exe), "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(args.port),
           "--served-model-name", SERVED_NAME, "--tool-call-parser", "hermes", "--enable-auto-tool-choice",
           "--reasoning-parser", "qwen3", "--max-model-len", MAX_MODEL_LEN, "--workers", "1",
           "--keep-alive-timeout", "600"]  # the workloads take seconds to build between requests
    log = open(out_dir / "server.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        conn = wait_ready(args.port, out_dir / "server.log", proc)

        def post(path: str, body: bytes) -> bytes:
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"{path}: {resp.status} {data[:200]!r}")
            return data

        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
        wanted = args.only.split("|")
        workloads = build(tok, SERVED_NAME, lambda p, b: json.loads(post(p, json.dumps(b).encode())))
        for wl in workloads:
            if not any(w in wl.name for w in wanted):
                continue
            seq = 0

            def body() -> bytes:
                nonlocal seq
                seq += 1
                b = wl.bodies[seq % len(wl.bodies)]
                return b.replace(SEQ.encode(), f"cg-{seq}".encode()) if wl.unique else b

            for _ in range(args.warmup):
                post(wl.path, body())
            control("-z", str(proc.pid))
            control("-i", "on", str(proc.pid))
            for _ in range(args.requests):
                post(wl.path, body())
            control("-i", "off", str(proc.pid))
            before = set(out_dir.glob("cg.out*"))
            control("-d", str(proc.pid))
            total = dumped_total(out_dir, before)
            print(f"{wl.name}: {total / args.requests:,.0f} instructions/request ({args.requests} requests)",
                  flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    return 0


def wait_ready(port: int, log_path: Path, proc: subprocess.Popen) -> http.client.HTTPConnection:
    deadline = time.time() + 600
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(log_path.read_text())
        if "tokenizer backend" in log_path.read_text():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            conn.request("GET", "/health")
            conn.getresponse().read()
            return conn
        time.sleep(1)
    raise RuntimeError("server not ready")


def dumped_total(out_dir: Path, before: set) -> int:
    deadline = time.time() + 120
    while time.time() < deadline:
        new = set(out_dir.glob("cg.out*")) - before
        for f in new:
            m = re.search(r"^totals: (\d+)", f.read_text(errors="replace"), re.M)
            if m:
                return int(m.group(1))
        time.sleep(0.5)
    raise RuntimeError("no callgrind dump")


if __name__ == "__main__":
    sys.exit(main())
