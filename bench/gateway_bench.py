"""CPU per streamed token: the gateway (one process, engine behind it) vs the seed pipeline
(render, then one derender call per engine chunk carrying stream_state), in one run.

16 concurrent streams of a 2,000-token qwen3 output (reasoning, then a tool call), the stub
engine sending one token per SSE event. Each server is pinned to its own core (taskset) and
its CPU is read from /proc (user+system) around its phase; the stub engine and the clients
share the other core. Also reports the time to first byte the gateway adds: from the engine
writing its first event to the client reading its first chunk (both CLOCK_MONOTONIC).

    python bench/gateway_bench.py [--streams 16] [--tokens 2000] [--pipeline-streams 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENBRIDGE_SHARED", ROOT.parent / "shared")).resolve()
MODEL = SHARED / "models" / "qwen3"
NAME = "Qwen/Qwen3-8B"
TOOLS = [{"type": "function", "function": {"name": "write_report", "description": "Write a report",
          "parameters": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                         "required": ["title", "body"]}}}]
MESSAGES = [{"role": "user", "content": "Think it through, then write the report with the tool."}]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def output_ids(n: int) -> list[int]:
    """About 70% reasoning, then one tool call whose arguments fill the rest, then <|im_end|>."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    words = ("the engine streams token ids and the frontend turns them into text while the parser "
             "decides where reasoning ends and the call begins ").split()
    reasoning = tok.encode(" ".join(words[i % len(words)] for i in range(int(n * 0.8))), add_special_tokens=False).ids
    reasoning = reasoning[: int(n * 0.7)]
    head = tok.encode("<think>\n", add_special_tokens=False).ids + reasoning + tok.encode("\n</think>\n\n<tool_call>\n", add_special_tokens=False).ids
    tail = tok.encode("\"}}\n</tool_call>", add_special_tokens=False).ids + [tok.token_to_id("<|im_end|>")]
    opening = tok.encode('{"name": "write_report", "arguments": {"title": "Findings", "body": "', add_special_tokens=False).ids
    room = n - len(head) - len(opening) - len(tail)
    body = tok.encode(" ".join(words[i % len(words)] for i in range(room)), add_special_tokens=False).ids[:room]
    ids = head + opening + body + tail
    assert len(ids) == n, len(ids)
    return ids


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def start(argv: list[str], core: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(["taskset", "-c", str(core), *argv], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def wait_ready(port: int, path: str = "/health", timeout: float = 120) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2)
            return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"port {port} not ready")


def wait_backend(log: Path, timeout: float = 120) -> None:
    """Until a one-worker server switched to its fast tokenizer backend: the switch runs on a
    thread after start-up (~1 s of CPU) and must not be counted as the first streams' cost."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = log.read_text(errors="replace")
        if "tokenizer backend:" in text or ("encoder " in text and "once its start-up checks pass" not in text):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{log}: no tokenizer backend line")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _post(port: int, body: dict, headers: dict | None = None):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(f"POST {body.pop('_path')} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{head}"
                 f"content-length: {len(data)}\r\n\r\n".encode() + data)
    await writer.drain()
    return reader, writer


async def gateway_stream(port: int, rid: str) -> tuple[int, float, float]:
    """One streamed chat completion: completion tokens, when it was sent and when its first
    chunk came (monotonic)."""
    body = {"_path": "/v1/chat/completions", "model": NAME, "messages": MESSAGES, "tools": TOOLS, "stream": True,
            "stream_options": {"include_usage": True}}
    sent = time.monotonic()
    reader, writer = await _post(port, body, {"x-request-id": rid})
    first, tokens, buf = None, 0, b""
    status = await reader.readline()
    assert b" 200 " in status, status
    while await reader.readline() not in (b"\r\n", b""):
        pass
    while True:
        size = await reader.readline()
        n = int(size.strip() or b"0", 16)
        if n == 0:
            break
        chunk = await reader.readexactly(n + 2)
        if first is None:
            first = time.monotonic()
        buf += chunk[:-2]
    writer.close()
    for ev in buf.split(b"\n\n"):
        if ev.startswith(b"data: {") and b'"usage":{' in ev and b'"choices":[]' in ev:
            tokens = json.loads(ev[6:])["usage"]["completion_tokens"]
    assert b"data: [DONE]" in buf and b"write_report" in buf
    return tokens, sent, first


async def direct_stream(eport: int, gen: dict, rid: str) -> tuple[int, float, float]:
    """The same stream read straight from the engine: the baseline the gateway adds to."""
    body = dict(gen, _path="/inference/v1/generate", stream=True)
    sent = time.monotonic()
    reader, writer = await _post(eport, body, {"x-request-id": rid})
    assert b" 200 " in await reader.readline()
    while await reader.readline() not in (b"\r\n", b""):
        pass
    first = None
    while True:
        n = int((await reader.readline()).strip() or b"0", 16)
        if n == 0:
            break
        await reader.readexactly(n + 2)
        if first is None:
            first = time.monotonic()
    writer.close()
    return 0, sent, first


async def http_json(reader, writer, port: int, body: dict) -> dict:
    data = json.dumps(body).encode()
    writer.write(f"POST {body.pop('_path', '')} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                 f"content-length: {len(data)}\r\n\r\n".encode() + data)
    status = await reader.readline()
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    out = json.loads(await reader.readexactly(length))
    assert b" 200 " in status, (status, out)
    return out


async def pipeline_stream(port: int, ids: list[int]) -> int:
    """The seed's three-call flow, streamed: render, then one derender call per engine token."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    chat = {"model": NAME, "messages": MESSAGES, "tools": TOOLS}
    gen = await http_json(reader, writer, port, dict(chat, _path="/v1/chat/completions/render"))
    prompt = gen["token_ids"]
    state = None
    for k, t in enumerate(ids):
        last = k == len(ids) - 1
        chunk = {"request_id": gen["request_id"], "choices": [{"index": 0, "token_ids": [t],
                                                                "finish_reason": "stop" if last else None}]}
        body = {"_path": "/v1/chat/completions/derender", "model": NAME, "stream": True, "generate_chunk": chunk,
                "stream_state": state, "prompt_token_ids": prompt, "chat_request": chat}
        state = (await http_json(reader, writer, port, body))["stream_state"]
    writer.close()
    return len(ids)


def added_ttfb(eport: int, rids: list[str], results: list) -> list[float]:
    """Per stream, in ms: the client's wait for its first chunk less the engine's own wait from
    receiving the request to sending its first event."""
    import urllib.request

    stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{eport}/stub/stats").read())
    out = []
    for rid, (_, sent, first) in zip(rids, results):
        name = f"generate-tokens-{rid}"
        out.append(((first - sent) - (stats["first_event"][name] - stats["received"][name])) * 1000)
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--pipeline-streams", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3, help="gateway rounds of --streams streams")
    ap.add_argument("--server-flags", default="", help="more flags for both servers, e.g. '--tool-call-streaming whole'")
    ap.add_argument("--ttfb-samples", type=int, default=50, help="streams sent one at a time for the TTFB alone")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    ids = output_ids(args.tokens)
    (tmp / "ids.json").write_text(json.dumps(ids))
    py = sys.executable
    eport, gport, pport = free_port(), free_port(), free_port()
    flags = ["--served-model-name", NAME, "--tool-call-parser", "hermes", "--enable-auto-tool-choice",
             "--reasoning-parser", "qwen3", "--max-model-len", "8192", "--workers", "1", "--host", "127.0.0.1",
             *args.server_flags.split()]
    procs = [
        start([py, "-m", "tokenbridge.testing.stub_engine", "--port", str(eport), "--output-file", str(tmp / "ids.json"),
               "--chunking", "one"], 1, tmp / "engine.log"),
        start([py, "-m", "tokenbridge.cli", "serve", str(MODEL), "--port", str(gport), *flags,
               "--engine-url", f"http://127.0.0.1:{eport}"], 0, tmp / "gateway.log"),
        start([py, "-m", "tokenbridge.cli", "serve", str(MODEL), "--port", str(pport), *flags], 0, tmp / "pipeline.log"),
    ]
    engine, gateway, pipeline = procs
    try:
        for p in (eport, gport, pport):
            wait_ready(p)
        for log in ("gateway.log", "pipeline.log"):
            wait_backend(tmp / log)
        os.sched_setaffinity(0, {1})
        load = os.getloadavg()

        async def warm():
            await gateway_stream(gport, "warm")
            await pipeline_stream(pport, ids[:50])

        asyncio.run(warm())
        # gateway phase
        c0, t0 = cpu_seconds(gateway.pid), time.monotonic()
        results = []
        for r in range(args.rounds):
            results += asyncio.run(_gather([gateway_stream(gport, f"bench-{r}-{i}") for i in range(args.streams)]))
        g_wall = time.monotonic() - t0
        g_cpu = cpu_seconds(gateway.pid) - c0
        g_tokens = sum(t for t, _, _ in results)
        busy = added_ttfb(eport, [f"bench-{r}-{i}" for r in range(args.rounds) for i in range(args.streams)], results)
        # time to first byte, one stream at a time: through the gateway, and from the engine itself
        alone = [(lambda t: (t[2] - t[1]) * 1000)(asyncio.run(gateway_stream(gport, f"alone-{i}")))
                 for i in range(args.ttfb_samples)]
        import urllib.request

        req = urllib.request.Request(f"http://127.0.0.1:{gport}/v1/chat/completions/render", headers={
            "content-type": "application/json"}, data=json.dumps({"model": NAME, "messages": MESSAGES, "tools": TOOLS}).encode())
        gen = json.loads(urllib.request.urlopen(req).read())
        direct = [(lambda t: (t[2] - t[1]) * 1000)(asyncio.run(direct_stream(eport, gen, f"direct-{i}")))
                  for i in range(args.ttfb_samples)]
        # pipeline phase
        c1, t1 = cpu_seconds(pipeline.pid), time.monotonic()
        p_tokens = sum(asyncio.run(_gather([pipeline_stream(pport, ids) for _ in range(args.pipeline_streams)])))
        p_wall = time.monotonic() - t1
        p_cpu = cpu_seconds(pipeline.pid) - c1
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, 15)
                p.wait(timeout=10)
            except Exception:
                p.kill()
    g_us, p_us = g_cpu / g_tokens * 1e6, p_cpu / p_tokens * 1e6
    report = {
        "tokens_per_stream": args.tokens, "streams": args.streams, "rounds": args.rounds,
        "gateway": {"tokens": g_tokens, "cpu_s": round(g_cpu, 2), "wall_s": round(g_wall, 2), "us_per_token": round(g_us, 1),
                    "ttfb_ms_one_at_a_time": {"p50": round(statistics.median(alone), 2), "p99": round(pct(alone, 99), 2)},
                    "engine_direct_ttfb_ms": {"p50": round(statistics.median(direct), 2), "p99": round(pct(direct, 99), 2)},
                    "added_ttfb_ms": {"p50": round(statistics.median(alone) - statistics.median(direct), 2),
                                      "p99": round(pct(alone, 99) - pct(direct, 99), 2)},
                    f"added_ttfb_ms_{args.streams}_starting_together": {
                        "p50": round(statistics.median(busy), 2), "p99": round(pct(busy, 99), 2)}},
        "pipeline": {"tokens": p_tokens, "cpu_s": round(p_cpu, 2), "wall_s": round(p_wall, 2), "us_per_token": round(p_us, 1)},
        "pipeline_over_gateway": round(p_us / g_us, 1),
        "loadavg_at_start": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=2))


async def _gather(coros):
    return await asyncio.gather(*coros)


if __name__ == "__main__":
    main()
