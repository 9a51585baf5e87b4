"""A bare HTTP/1.1 server for ``App``: httptools parsing on an ``asyncio.Protocol`` (uvloop).

Why not uvicorn: for a request that costs ~0.3 ms of handler time, uvicorn's ASGI machinery
(scope dicts, receive/send messages, a task per request) costs as much again. This server calls
``App._handle`` directly and runs it to completion without a task when it does not suspend,
which is every request below the app's ``OFFLOAD_BODY_BYTES``. Behaviour kept from uvicorn: keep-alive
(5 s idle), pipelined requests answered in order, Content-Length and chunked request bodies,
``Expect: 100-continue``, a 413 from the headers before an oversized body is read (then the
connection closes), HEAD without a body, 400 on malformed HTTP, graceful SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import collections
import email.utils
import signal
import socket
import time
from urllib.parse import unquote

import httptools

from tokenbridge.gateway.sse import Streamed
from tokenbridge.server.app import App

KEEP_ALIVE_S = 5.0
SHUTDOWN_GRACE_S = 10.0
_REASONS = {
    200: b"OK", 400: b"Bad Request", 401: b"Unauthorized", 404: b"Not Found",
    405: b"Method Not Allowed", 413: b"Request Entity Too Large", 422: b"Unprocessable Entity",
    500: b"Internal Server Error", 501: b"Not Implemented", 503: b"Service Unavailable",
}
_BAD_REQUEST = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 29\r\n\r\nInvalid HTTP request received."
)


class _StopParsing(Exception):
    """Raised from a parser callback to stop reading a body that will not be read."""


class _Date:
    """The ``date`` header line, formatted once per second."""

    second = -1
    line = b""

    @classmethod
    def get(cls) -> bytes:
        now = int(time.time())
        if now != cls.second:
            cls.second = now
            cls.line = b"date: " + email.utils.formatdate(now, usegmt=True).encode() + b"\r\n"
        return cls.line


class _Request:
    __slots__ = ("method", "path", "headers", "chunks", "size", "too_large", "keep_alive")

    def __init__(self, method: str, path: str, headers: list) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.chunks: list[bytes] = []
        self.size = 0
        self.too_large = False
        self.keep_alive = True


class HttpProtocol(asyncio.Protocol):
    """One connection: parse, queue complete requests, answer them one at a time in order."""

    def __init__(self, app: App, server: "Server") -> None:
        self.app = app
        self.server = server
        self.limit = app.cfg.max_body_bytes
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.queue: collections.deque[_Request] = collections.deque()
        self.current: _Request | None = None  # being parsed
        self.url = b""
        self.headers: list = []
        self.busy = False  # a request is being answered asynchronously
        self.closing = False
        self.idle: asyncio.TimerHandle | None = None
        self.rejected = False  # an oversized body: answered, the rest is never read
        self.task: asyncio.Task | None = None  # the request answered asynchronously, if any
        self.writable: asyncio.Future | None = None  # set when the transport drains

    # -- connection -----------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.server.connections.add(self)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self._arm_idle()

    def connection_lost(self, exc) -> None:
        self.closing = True
        self.server.connections.discard(self)
        if self.idle is not None:
            self.idle.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()  # the client is gone: a gateway request aborts its engine request
        self.resume_writing()

    def pause_writing(self) -> None:
        if self.writable is None:
            self.writable = self.server.loop.create_future()

    def resume_writing(self) -> None:
        w, self.writable = self.writable, None
        if w is not None and not w.done():
            w.set_result(None)

    def _arm_idle(self) -> None:
        if self.idle is not None:
            self.idle.cancel()
        self.idle = self.server.loop.call_later(KEEP_ALIVE_S, self.close)

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            self.transport.close()

    def is_idle(self) -> bool:
        return not self.busy and not self.queue and self.current is None

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # No upgrades: answer the request as plain HTTP, then close (the rest is not HTTP).
            req, self.current = self.current, None
            if req is not None:
                req.keep_alive = False
                self.queue.append(req)
        except httptools.HttpParserError:
            if not self.rejected:
                self.transport.write(_BAD_REQUEST)
                self.close()
                return
        self._drain()

    # -- httptools callbacks --------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.url = b""
        self.headers = []
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        raw_path = httptools.parse_url(self.url).path
        req = _Request(self.parser.get_method().decode("ascii"), unquote(raw_path.decode("ascii")), self.headers)
        self.current = req
        declared = None
        expect = False
        for name, value in self.headers:
            if name == b"content-length":
                declared = value
            elif name == b"expect" and value.lower() == b"100-continue":
                expect = True
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            # Answer now (the app's 413 comes from the header) and never read the body.
            self._reject(req)
        if expect:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        req = self.current
        if req is None or req.too_large:
            return
        req.size += len(body)
        req.chunks.append(body)
        if req.size > self.limit:  # a chunked body grew past the limit: the app answers 413
            self._reject(req)

    def _reject(self, req: _Request) -> None:
        """Queue ``req`` to be answered (413) at once, then stop reading this connection."""
        req.too_large = True
        req.keep_alive = False
        self.current = None
        self.queue.append(req)
        self.rejected = True
        self.transport.pause_reading()
        raise _StopParsing

    def on_message_complete(self) -> None:
        req = self.current
        if req is None:
            return
        self.current = None
        req.keep_alive = self.parser.should_keep_alive()
        self.queue.append(req)

    # -- answering ------------------------------------------------------------------------

    def _drain(self) -> None:
        """Answer queued requests in order; a request that suspends finishes on a task."""
        while self.queue and not self.busy and not self.transport.is_closing():
            req = self.queue.popleft()
            t0 = time.perf_counter()
            coro = self._answer(req)
            try:
                yielded = coro.send(None)
            except StopIteration as stop:
                self._respond(req, stop.value, t0)
                continue
            self.busy = True
            self.task = self.server.loop.create_task(self._finish(req, coro, yielded, t0))
            return
        if self.is_idle() and not self.closing:
            self._arm_idle()
            if self.server.stopping:
                self.close()

    async def _finish(self, req: _Request, coro, yielded, t0: float) -> None:
        """Drive a suspended ``_answer`` the way a task would: wait, then resume it."""
        try:
            while True:
                cancelled = None  # this task was cancelled (the client left): tell the coroutine
                if yielded is None:
                    try:
                        await asyncio.sleep(0)
                    except asyncio.CancelledError as e:
                        cancelled = e
                else:
                    yielded._asyncio_future_blocking = False  # as a task resets it
                    try:
                        await yielded
                    except asyncio.CancelledError as e:
                        if not yielded.cancelled():  # else the coroutine sees it on resume
                            cancelled = e
                    except BaseException:  # the coroutine sees the outcome on resume
                        pass
                try:
                    yielded = coro.send(None) if cancelled is None else coro.throw(cancelled)
                except StopIteration as stop:
                    result = stop.value
                    break
        except BaseException:
            self.close()
            raise
        self.busy = False
        if not self.closing:
            self._respond(req, result, t0)
            self._drain()

    async def _answer(self, req: _Request):
        body = b"".join(req.chunks)
        req.chunks = []

        async def receive() -> dict:
            return {"type": "http.request", "body": body, "more_body": False}

        scope = {"headers": req.headers}
        return await self.app._handle(scope, receive, req.method, req.path)

    def _respond(self, req: _Request, result, t0: float) -> None:
        status, headers, payload = result
        out = [b"HTTP/1.1 ", str(status).encode(), b" ", _REASONS.get(status, b""), b"\r\n", _Date.get()]
        for name, value in headers:
            out += (name, b": ", value, b"\r\n")
        keep = req.keep_alive and not self.server.stopping
        if not keep:
            out.append(b"connection: close\r\n")
        if isinstance(payload, Streamed):
            out.append(b"transfer-encoding: chunked\r\n\r\n")
            self.transport.write(b"".join(out))
            self.busy = True
            self.task = self.server.loop.create_task(self._stream(req, payload, keep, status, t0))
            return
        out += (b"content-length: ", str(len(payload)).encode(), b"\r\n\r\n")
        if req.method != "HEAD":
            out.append(payload)
        self.transport.write(b"".join(out))
        self.app.observe(req.method, req.path, status, time.perf_counter() - t0, req.size, len(payload))
        if not keep:
            self.queue.clear()
            self.close()


    async def _stream(self, req: _Request, body: Streamed, keep: bool, status: int, t0: float) -> None:
        """Send a streamed body chunk by chunk, never faster than the client reads it."""
        chunks = body.chunks
        complete = False
        sent = 0
        try:
            async for piece in chunks:
                if self.closing:
                    break
                sent += len(piece)
                self.transport.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                if self.writable is not None:
                    await self.writable
            else:
                complete = True
        finally:
            await chunks.aclose()
        self.busy = False
        self.task = None
        if not complete or self.closing:
            self.close()
            return
        self.transport.write(b"0\r\n\r\n")
        self.app.observe(req.method, req.path, status, time.perf_counter() - t0, req.size, sent)
        if not keep:
            self.queue.clear()
            self.close()
            return
        self._drain()


class Server:
    """Accepts on one socket; on SIGTERM/SIGINT stops accepting and finishes in-flight work."""

    def __init__(self, app: App, ssl=None, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        self.app = app
        self.ssl = ssl
        self.grace_s = grace_s
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self.connections: set[HttpProtocol] = set()
        self.stopping = False

    async def serve(self, sock: socket.socket) -> None:
        self.loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, stop.set)
        server = await self.loop.create_server(
            lambda: HttpProtocol(self.app, self), sock=sock, backlog=2048, ssl=self.ssl
        )
        await stop.wait()
        self.stopping = True
        server.close()
        for conn in list(self.connections):
            if conn.is_idle():
                conn.close()
        deadline = self.loop.time() + self.grace_s
        while self.connections and self.loop.time() < deadline:
            await asyncio.sleep(0.02)
        for conn in list(self.connections):
            conn.close()


def run(app: App, host: str, port: int, sock: socket.socket | None = None, ssl=None,
        grace_s: float = SHUTDOWN_GRACE_S) -> None:
    """Serve ``app`` on ``sock`` (a worker's inherited socket) or a fresh one on host:port;
    TLS with an ``ssl.SSLContext``; ``grace_s`` for in-flight requests after SIGTERM."""
    if sock is None:
        from tokenbridge.server.workers import bind_socket

        sock = bind_socket(host, port)
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(Server(app, ssl, grace_s).serve(sock))
