"""Stalled and slow clients against a running server: is ``/health`` still fast, and are the
stalled sockets closed by the server within its timeouts?

    python bench/hostile_clients.py --port P [--stalled 3000] [--slow-headers 50]
        [--body-timeout 30] [--header-timeout 10] [--probes 50]

It opens ``--stalled`` connections that send a request's headers with ``Content-Length: 100``
and then one byte of body (``{``) and nothing more, and ``--slow-headers`` connections that
send a request line and then one header byte a second. While they are held it times
``--probes`` ``GET /health`` calls on fresh connections, then waits for the server to close
every stalled socket and reports when the last one closed (from its open). Loopback only,
bounded in count and time: it stops by itself after body timeout + 30 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import time

STALLED = (
    b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{"
)


async def stalled_body(port: int, opened: list, closed: list) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    t0 = time.monotonic()
    opened.append(t0)
    writer.write(STALLED)
    await writer.drain()
    answer = await reader.read()  # until the server closes
    closed.append((time.monotonic() - t0, answer[:12]))
    writer.close()


async def slow_header(port: int, closed: list, stop: asyncio.Event) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    t0 = time.monotonic()
    writer.write(b"GET /health HTTP/1.1\r\n")
    try:
        while not stop.is_set() and not reader.at_eof():
            writer.write(b"X")
            await writer.drain()
            try:
                await asyncio.wait_for(reader.read(1), 1.0)
            except asyncio.TimeoutError:
                continue
            break
    except (ConnectionError, OSError):
        pass
    closed.append(time.monotonic() - t0)
    writer.close()


async def health(port: int) -> float:
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = await reader.read()
    writer.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:40]
    return (time.perf_counter() - t0) * 1000


async def main(a) -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    opened: list = []
    closed: list = []
    slow_closed: list = []
    stop = asyncio.Event()
    tasks = []
    for i in range(a.stalled):
        tasks.append(asyncio.create_task(stalled_body(a.port, opened, closed)))
        if i % 200 == 199:
            await asyncio.sleep(0.05)
    slow = [asyncio.create_task(slow_header(a.port, slow_closed, stop)) for _ in range(a.slow_headers)]
    while len(opened) < a.stalled:
        await asyncio.sleep(0.05)
    held_at = time.monotonic()
    await asyncio.sleep(0.5)
    lat = []
    for _ in range(a.probes):
        lat.append(await health(a.port))
        await asyncio.sleep(0.02)
    held = a.stalled - len(closed)
    deadline = held_at + a.body_timeout + 30
    while len(closed) < a.stalled and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    stop.set()
    await asyncio.wait(slow, timeout=a.header_timeout + 5)
    for t in tasks + slow:
        t.cancel()
    lat.sort()
    closes = sorted(c[0] for c in closed)
    return {
        "stalled": a.stalled,
        "slow_headers": a.slow_headers,
        "held_while_probing": held,
        "health_ms": {"p50": round(statistics.median(lat), 2), "max": round(lat[-1], 2), "n": len(lat)},
        "stalled_closed": len(closed),
        "stalled_close_s": {"first": round(closes[0], 2), "last": round(closes[-1], 2)} if closes else None,
        "stalled_answers": sorted({c[1].decode("latin-1") for c in closed}),
        "slow_header_closed": len(slow_closed),
        "slow_header_close_s_max": round(max(slow_closed), 2) if slow_closed else None,
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--stalled", type=int, default=3000)
    ap.add_argument("--slow-headers", type=int, default=50)
    ap.add_argument("--body-timeout", type=float, default=30)
    ap.add_argument("--header-timeout", type=float, default=10)
    ap.add_argument("--probes", type=int, default=50)
    print(json.dumps(asyncio.run(main(ap.parse_args())), indent=1))
