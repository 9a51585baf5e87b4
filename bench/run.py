"""One-command benchmark: tokenbridge side by side with vLLM 0.33's Python render server
(vLLM-Py), its Rust render server (``vllm-rs render``) and SMG 1.13 (``/tokenize`` only).

    python bench/run.py --pin                       # every peer that is installed
    python bench/run.py --pin --variants w1,w2 --only "1.2k"
    python bench/run.py --no-oracle                 # tokenbridge and the raw tokenizer only

Each server is spawned on loopback, timed from spawn to the first ``/health`` 200, loaded with
``wrk`` (1 thread, 2 connections) for a bounded time per workload, servers taking turns, and
its RSS (summed over worker processes) read from /proc. Each run also reports the server's CPU
per request (user + system over its processes: the inverse of one core's throughput, whoever
shares the core) and the cores wrk used, which is how ``--workers 2`` is judged on a two-core
machine, where wrk takes part of the second worker's core. With ``--pin`` every server runs on
CPU 0 (a two-worker tokenbridge on CPUs 0-1) and wrk on the last CPU. vllm-rs comes from the
oracle venv (``lib/python3.11/site-packages/vllm/vllm-rs``); SMG from a venv of its own
(``~/.cache/smg-venv``: ``python3 -m venv ~/.cache/smg-venv && ~/.cache/smg-venv/bin/pip
install smg==1.13.0``). A route a peer does not serve is reported as ``-``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import timeit
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import SEQ, Workload, build  # noqa: E402

BENCH = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("TOKENBRIDGE_SHARED", "/work/shared"))
MODEL = SHARED / "models" / "qwen3"
SERVED_NAME = "Qwen/Qwen3-8B"
ORACLE_VENV = Path(os.environ.get("ORACLE_VENV", Path.home() / ".cache" / "tokenbridge-oracle"))
VLLM_RS = ORACLE_VENV / "lib" / "python3.11" / "site-packages" / "vllm" / "vllm-rs"
SMG = Path(os.environ.get("SMG_VENV", Path.home() / ".cache" / "smg-venv")) / "bin" / "smg"
RENDER_ROUTES = ("/v1/chat/completions/render", "/v1/completions/render")
MAX_MODEL_LEN = "40960"  # the 32k workload needs it; both servers get the same value
RSS_SETTLE_S = 1.0  # between the last workload and reading "RSS after the load"


@dataclass
class Server:
    name: str
    cmd: list[str]
    env: dict[str, str]
    port: int
    routes: tuple[str, ...] | None = None  # None: every route
    model: str = SERVED_NAME  # the model name its request bodies carry
    health: str = "/health"
    cpus: str = "0"
    proc: subprocess.Popen | None = None
    startup_s: float = float("nan")
    rss_ready_mb: float = float("nan")
    rss_after_mb: float = float("nan")
    results: dict[str, dict] = field(default_factory=dict)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tokenbridge_server(variant: str) -> Server:
    """``variant``: ``w1`` (one worker), ``w2``, ``w0`` (the default count)."""
    workers = int(variant[1:])
    port = free_port()
    exe = shutil.which("tokenbridge") or "tokenbridge"
    cmd = [exe, "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(port), "--served-model-name", SERVED_NAME,
           "--tool-call-parser", "hermes", "--enable-auto-tool-choice", "--reasoning-parser", "qwen3",
           "--max-model-len", MAX_MODEL_LEN]
    if workers:
        cmd += ["--workers", str(workers)]
    return Server(f"tb-{variant}", cmd, {}, port, cpus="0" if workers == 1 else "0-1")


def vllm_server() -> Server:
    port = free_port()
    cmd = [str(SHARED / "oracle" / "serve.sh"), "profile", "qwen3", str(port),
           str(SHARED / "parity" / "profiles.json"), "--max-model-len", MAX_MODEL_LEN]
    return Server("vllm-py", cmd, {"VLLM_TARGET_DEVICE": "cpu", "ORACLE_VENV": str(ORACLE_VENV)}, port)


def vllm_rs_server() -> Server:
    port = free_port()
    cmd = [str(VLLM_RS), "render", str(MODEL), "--host", "127.0.0.1", "--port", str(port), "--served-model-name",
           SERVED_NAME, "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3", "--max-model-len", MAX_MODEL_LEN]
    return Server("vllm-rs", cmd, {}, port, routes=RENDER_ROUTES)


def smg_server() -> Server:
    port = free_port()
    cmd = [str(SMG), "launch", "--model-path", str(MODEL), "--disable-health-check", "--host", "127.0.0.1",
           "--port", str(port), "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port())]
    return Server("smg", cmd, {}, port, routes=("/tokenize",), model=str(MODEL), health="/health")


def route_of(server: Server, path: str) -> str | None:
    """The path this server answers ``path`` on, or None when it does not serve it."""
    if server.routes is not None and path not in server.routes:
        return None
    return "/v1/tokenize" if server.name == "smg" and path == "/tokenize" else path


def tree_pids(pid: int) -> list[int]:
    """``pid`` and its descendants (a server's worker processes)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    return tree


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a server and its workers have used so far."""
    ticks = 0
    for p in tree_pids(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_rss_mb(pid: int) -> float:
    """Memory of a server in MB: its RSS, or with worker processes the sum of their PSS
    (forked workers share the loaded model copy-on-write, which a sum of RSS would count twice)."""
    tree = tree_pids(pid)
    field_name = "VmRSS:" if len(tree) == 1 else "Pss:"
    source = "status" if len(tree) == 1 else "smaps_rollup"
    total_kb = 0
    for p in tree:
        try:
            for line in Path(f"/proc/{p}/{source}").read_text().splitlines():
                if line.startswith(field_name):
                    total_kb += int(line.split()[1])
        except OSError:
            pass
    return total_kb / 1024


def start(server: Server, pin: bool, timeout: float = 180) -> None:
    t0 = time.perf_counter()
    cmd = ["taskset", "-c", server.cpus, *server.cmd] if pin else server.cmd
    # Servers start as on a user's machine, where imports read cached bytecode: a shell that sets
    # PYTHONDONTWRITEBYTECODE would make every start compile each module again (~0.3 s of ready).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    server.proc = subprocess.Popen(cmd, env={**env, **server.env}, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{server.port}{server.health}"
    while time.perf_counter() - t0 < timeout:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    server.startup_s = time.perf_counter() - t0
                    break
        except OSError:
            time.sleep(0.01)
    else:
        raise RuntimeError(f"{server.name} not ready after {timeout}s")
    time.sleep(0.5)
    server.rss_ready_mb = tree_rss_mb(server.proc.pid)


def stop(server: Server) -> None:
    if server.proc and server.proc.poll() is None:
        os.killpg(server.proc.pid, signal.SIGTERM)
        try:
            server.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()


class BadStatus(RuntimeError):
    """A warm-up request did not answer 200: the workload is reported as failed, not timed."""


def post(port: int, path: str, body: dict | bytes) -> dict:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise BadStatus(f"{path}: HTTP {e.code}: {e.read()[:300].decode(errors='replace')}") from None


def run_wrk(
    server: Server, wl: Workload, tmp: Path, seconds: float, connections: int, wrk_cpus: str | None, pipeline: int = 1
) -> dict:
    path = route_of(server, wl.path)
    own_model = f'"model":{json.dumps(server.model)}'.encode()
    bodies = [b.replace(f'"model":{json.dumps(SERVED_NAME)}'.encode(), own_model, 1) for b in wl.bodies]
    file = tmp / f"{abs(hash((wl.name, server.model)))}.jsonl"
    if not file.exists():
        file.write_bytes(b"\n".join(bodies) + b"\n")
    for body in bodies[:3]:  # warm-up and a correctness check
        post(server.port, path, body.replace(SEQ.encode(), b"warm-up"))
    wrk = ["wrk", "-t1", f"-c{connections}", f"-d{int(seconds)}s", "--timeout", "30s", "-s", str(BENCH / "post.lua"),
           f"http://127.0.0.1:{server.port}", "--", str(file), path, *(["unique", str(time.time_ns())] if wl.unique else []),
           f"pipeline={pipeline}"]
    cpu_before, wrk_before = tree_cpu_s(server.proc.pid), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        ["taskset", "-c", wrk_cpus, *wrk] if wrk_cpus else wrk, capture_output=True, text=True, check=True,
    ).stdout
    cpu_after, wrk_after = tree_cpu_s(server.proc.pid), resource.getrusage(resource.RUSAGE_CHILDREN)
    line = next(x for x in out.splitlines() if x.startswith("BENCH_RESULT "))
    r = json.loads(line.split(" ", 1)[1])
    seconds_run = r["duration_us"] / 1e6
    r["req_s"] = r["requests"] / seconds_run
    # CPU per request is what one core's throughput is the inverse of, whoever else shares it.
    r["cpu_us"] = (cpu_after - cpu_before) / max(r["requests"], 1) * 1e6
    wrk_cpu = (wrk_after.ru_utime + wrk_after.ru_stime) - (wrk_before.ru_utime + wrk_before.ru_stime)
    r["wrk_cores"] = wrk_cpu / seconds_run
    return r


MAX_RUN_S = 60


def timed_run(server: Server, wl: Workload, tmp: Path, args: argparse.Namespace) -> dict:
    """One wrk run of ``args.seconds``, run again for longer when it answered fewer than
    ``args.min_requests``: a ratio to a slow peer (vLLM-Py's 2k-token derender answers ~5 a
    second) is otherwise the count of a few dozen answers."""
    r = run_wrk(server, wl, tmp, args.seconds, args.connections, args.wrk_cpus, args.pipeline)
    if 0 < r["requests"] < args.min_requests:
        seconds = min(MAX_RUN_S, math.ceil(args.seconds * 1.2 * args.min_requests / r["requests"]))
        r = run_wrk(server, wl, tmp, seconds, args.connections, args.wrk_cpus, args.pipeline)
    return r


def raw_rate(wl: Workload, seconds: float = 1.0) -> float:
    """Calls per second of the raw tokenizer operation on the same payload, one thread."""
    timer = timeit.Timer(wl.raw_op)
    n, dt = 1, 0.0
    while dt < 0.2:
        dt = timer.timeit(n)
        n *= 2
    n = max(1, int(n / 2 * seconds / dt))
    return n / timer.timeit(n)


def fastest_raw_rate(wl: Workload, tok) -> tuple[str, float]:
    """The fastest exact encoder on this workload's texts: ``tokenizers`` or, when installed and
    giving the same ids, fastokens (whose word cache is warm after the first call, as a server's
    would be)."""
    best = ("tokenizers", raw_rate(wl))
    if not wl.encode_texts:
        return best
    try:
        import fastokens
    except ImportError:
        return best
    ft = fastokens.Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    texts = wl.encode_texts
    if any(list(ft.encode(t, add_special_tokens=False).ids) != tok.encode(t, add_special_tokens=False).ids for t in texts):
        return best
    fast = Workload(wl.name, wl.path, [], "encode", lambda: [ft.encode(t, add_special_tokens=False) for t in texts], "")
    rate = raw_rate(fast)
    return ("fastokens", rate) if rate > best[1] else best


FAILED = {"req_s": float("nan"), "p50_us": float("nan"), "p99_us": float("nan"), "cpu_us": float("nan"),
          "wrk_cores": float("nan")}


def fmt(x: float, digits: int = 1) -> str:
    return "-" if x != x else f"{x:,.{digits}f}"


def report(servers: list[Server], workloads: list[Workload], raw: dict[str, tuple[str, float]], args) -> str:
    ours = [s for s in servers if s.name.startswith("tb-")]
    peers = [s for s in servers if not s.name.startswith("tb-")]
    rate = lambda s, wl: s.results.get(wl.name, FAILED)["req_s"]  # noqa: E731
    head = ["workload"]
    for s in servers:
        head += [f"{s.name} req/s", "p50 ms", "p99 ms"]
    head += [f"{o.name}/{p.name}" for o in ours for p in peers]
    head += [f"{o.name}/{ours[0].name}" for o in ours[1:]]
    head += ["raw op/s"]
    rows = []
    for wl in workloads:
        row = [wl.name]
        for s in servers:
            r = s.results.get(wl.name, FAILED)
            row += [fmt(r["req_s"]), fmt(r["p50_us"] / 1e3, 2), fmt(r["p99_us"] / 1e3, 2)]
        row += [_ratio(rate(o, wl), rate(p, wl)) for o in ours for p in peers]
        row += [_ratio(rate(o, wl), rate(ours[0], wl)) for o in ours[1:]]
        encoder, raw_rate_ = raw.get(wl.name, ("-", float("nan")))
        row += [f"{fmt(raw_rate_)} ({encoder})"]
        rows.append(row)
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows), ""]
    for s in servers:
        out.append(f"{s.name}: ready in {s.startup_s:.2f} s, RSS {s.rss_ready_mb:.0f} MB after ready, "
                   f"{s.rss_after_mb:.0f} MB after load" + (f" (CPUs {s.cpus})" if args.pin else ""))
    out.append("")
    out.append("Server CPU per request (us, user + system over all its processes) and the cores wrk used:")
    for wl in workloads:
        cells = [f"{s.name} {fmt(s.results.get(wl.name, FAILED)['cpu_us'])} (wrk "
                 f"{fmt(s.results.get(wl.name, FAILED)['wrk_cores'], 2)})" for s in servers if wl.name in s.results]
        out.append(f"  {wl.name}: " + ", ".join(cells))
    out.append("")
    out.append(f"wrk -t1 -c{args.connections} -d{args.seconds}s per workload (longer for fewer than "
               f"{args.min_requests} answers), best of {args.repeat}"
               + (f", {args.pipeline} requests pipelined per write" if args.pipeline > 1 else "")
               + (f", wrk on CPU {args.wrk_cpus}" if args.pin else ", unpinned")
               + "; '-' = route not served by that peer; raw = the fastest exact op on the same payload in one "
               "thread of this process (render: encode of the rendered prompt text; derender: decode)")
    out.append(f"load average before: {args.load_before}, after: {os.getloadavg()}")
    for wl in workloads:
        out.append(f"  {wl.name}: {wl.info}")
    return "\n".join(out)


def _ratio(a: float, b: float) -> str:
    return "-" if a != a or b != b or not b else f"{a / b:.2f}x"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", dest="oracle", action="store_true", default=None, help="require vLLM side by side")
    ap.add_argument("--no-oracle", dest="oracle", action="store_false", help="skip vLLM even if installed")
    ap.add_argument("--variants", default="w1",
                    help="comma list of tokenbridge set-ups: wN = --workers N (w0: default)")
    ap.add_argument("--settle", type=float, default=3,
                    help="seconds to wait after ready (the fast tokenizer backend loads within 2 s of it)")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--min-requests", type=int, default=100,
                    help="a run that answered fewer is run again for longer (at most 60 s)")
    ap.add_argument("--connections", type=int, default=2)
    ap.add_argument("--pipeline", type=int, default=1,
                    help="requests per write on each connection (HTTP/1.1 pipelining): cuts wrk's CPU per "
                    "request when it shares the servers' cores, as with --workers 2 on two CPUs")
    ap.add_argument("--repeat", type=int, default=1, help="runs per workload and server; the best is kept")
    ap.add_argument("--only", default="", help="run workloads whose name contains this text")
    ap.add_argument("--json", type=Path, default=None, help="also write all numbers here")
    ap.add_argument("--pin", action="store_true", help="servers on CPU 0 (two workers: 0-1), wrk on the last CPU")
    ap.add_argument("--peers", default="vllm-rs,vllm-py,smg", help="comma list of peers to run when installed")
    args = ap.parse_args()
    args.wrk_cpus = str((os.cpu_count() or 1) - 1) if args.pin else None
    args.load_before = os.getloadavg()
    if not shutil.which("wrk"):
        sys.exit("wrk not found: apt-get install -y wrk")
    have_oracle = (ORACLE_VENV / "bin" / "vllm").exists()
    if args.oracle and not have_oracle:
        sys.exit(f"--oracle: no vLLM venv at {ORACLE_VENV}")
    use_oracle = have_oracle if args.oracle is None else args.oracle

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    servers = [tokenbridge_server(v) for v in args.variants.split(",")]
    peers = args.peers.split(",")
    if "vllm-rs" in peers and VLLM_RS.exists():
        servers.append(vllm_rs_server())
    if "vllm-py" in peers and use_oracle:
        servers.append(vllm_server())
    if "smg" in peers and SMG.exists():
        servers.append(smg_server())
    tmp = Path(tempfile.mkdtemp(prefix="tokenbridge-bench-"))
    workloads: list[Workload] = []
    raw: dict[str, tuple[str, float]] = {}
    try:
        for server in servers:
            print(f"starting {server.name} ...", file=sys.stderr, flush=True)
            start(server, args.pin)
        time.sleep(args.settle)
        workloads = [w for w in build(tok, SERVED_NAME, lambda p, b: post(servers[0].port, p, b)) if args.only in w.name]
        for wl in workloads:  # servers take turns per workload, so drifting machine load hits all alike
            for server in servers:
                if route_of(server, wl.path) is None:
                    continue
                try:
                    runs = [timed_run(server, wl, tmp, args) for _ in range(args.repeat)]
                except BadStatus as e:
                    print(f"  {server.name:11s} {wl.name:38s} FAILED {e}", file=sys.stderr, flush=True)
                    continue
                r = server.results[wl.name] = max(runs, key=lambda x: x["req_s"])
                print(f"  {server.name:11s} {wl.name:38s} {r['req_s']:9.1f} req/s  p50 {r['p50_us'] / 1e3:7.2f} ms  "
                      f"p99 {r['p99_us'] / 1e3:7.2f} ms  CPU {r['cpu_us']:6.1f} us/req  "
                      f"errors {r['non_2xx'] + r['socket_errors']}",
                      file=sys.stderr, flush=True)
        # A second's settle first, for every server alike: tokenbridge gives the heap back within
        # ``memory.RELEASE_INTERVAL_S`` of its last large request, not during a burst of them.
        time.sleep(RSS_SETTLE_S)
        for server in servers:
            server.rss_after_mb = tree_rss_mb(server.proc.pid)
            stop(server)
        for wl in workloads:
            raw[wl.name] = fastest_raw_rate(wl, tok)
    finally:
        for server in servers:
            stop(server)
        shutil.rmtree(tmp, ignore_errors=True)
    print(report(servers, workloads, raw, args))
    if args.json:
        args.json.write_text(json.dumps({
            "servers": {s.name: {"startup_s": s.startup_s, "rss_ready_mb": s.rss_ready_mb,
                                 "rss_after_mb": s.rss_after_mb, "results": s.results} for s in servers},
            "raw_ops_per_s": raw,
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
