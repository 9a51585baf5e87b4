"""CPU per SSE event of the engine client candidates, reading the stub engine's generate stream.

Each candidate reads ``--streams`` concurrent streams of ``--tokens`` one-token events on
uvloop, splitting and decoding the events as the gateway does (``gateway.engine``); the
reading process is pinned to core 0, the stub engine to core 1. Candidates: aiohttp, httpx,
and a minimal client of our own on asyncio streams (chunked decoding by hand).

    python bench/engine_client_bench.py [--streams 16] [--tokens 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tokenbridge.gateway.engine import decode_event, split_events

BODY = {"request_id": "b", "token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 4096}, "stream": True}


async def read_events(chunks) -> int:
    n, rest = 0, b""
    async for data in chunks:
        events, rest = split_events(rest + data if rest else data)
        for p in events:
            if p == b"[DONE]":
                return n
            decode_event(p)
            n += 1
    return n


async def with_aiohttp(url: str, streams: int) -> int:
    import aiohttp

    async with aiohttp.ClientSession() as s:
        async def one(i):
            async with s.post(url, json=BODY, headers={"x-request-id": f"a{i}"}) as r:
                async def chunks():
                    while True:
                        d = await r.content.readany()
                        if not d:
                            return
                        yield d
                return await read_events(chunks())
        return sum(await asyncio.gather(*[one(i) for i in range(streams)]))


async def with_httpx(url: str, streams: int) -> int:
    import httpx

    async with httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_connections=streams)) as c:
        async def one(i):
            async with c.stream("POST", url, json=BODY, headers={"x-request-id": f"h{i}"}) as r:
                return await read_events(r.aiter_raw())
        return sum(await asyncio.gather(*[one(i) for i in range(streams)]))


async def with_own(url: str, streams: int) -> int:
    host, port = url.split("//")[1].split("/")[0].split(":")
    body = json.dumps(BODY).encode()

    async def one(i):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /inference/v1/generate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     b"x-request-id: o%d\r\ncontent-length: %d\r\n\r\n%s" % (i, len(body), body))
        while await reader.readline() not in (b"\r\n", b""):
            pass

        async def chunks():
            while True:
                n = int((await reader.readline()).strip() or b"0", 16)
                if n == 0:
                    return
                yield (await reader.readexactly(n + 2))[:-2]
        try:
            return await read_events(chunks())
        finally:
            writer.close()
    return sum(await asyncio.gather(*[one(i) for i in range(streams)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(prefix="client-bench-"))
    (tmp / "ids.json").write_text(json.dumps(list(range(100, 100 + args.tokens))))
    engine = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-m", "tokenbridge.testing.stub_engine", "--port",
                               str(port), "--output-file", str(tmp / "ids.json"), "--chunking", "one"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import urllib.request

        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except Exception:
                time.sleep(0.2)
        os.sched_setaffinity(0, {0})
        import uvloop

        url = f"http://127.0.0.1:{port}/inference/v1/generate"
        out = {}
        for name, fn in (("aiohttp", with_aiohttp), ("httpx", with_httpx), ("own", with_own)):
            uvloop.run(fn(url, 1))  # warm up
            best = None
            for _ in range(args.rounds):
                c0 = time.process_time()
                n = uvloop.run(fn(url, args.streams))
                us = (time.process_time() - c0) / n * 1e6
                best = us if best is None else min(best, us)
            out[name] = {"events": n, "cpu_us_per_event": round(best, 2)}
        out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(out, indent=2))
    finally:
        engine.terminate()
        engine.wait(timeout=10)


if __name__ == "__main__":
    main()
