"""A bare HTTP/1.1 server for ``App``: httptools parsing on an ``asyncio.Protocol`` (uvloop).

Why not uvicorn: for a request that costs ~0.3 ms of handler time, uvicorn's ASGI machinery
(scope dicts, receive/send messages, a task per request) costs as much again. This server calls
``App.answer`` directly with the parsed headers and body: a request whose handler does not
suspend (every one below the app's ``OFFLOAD_BODY_BYTES`` without an engine) is answered
without a coroutine or a task. Behaviour kept from uvicorn: keep-alive,
pipelined requests answered in order, Content-Length and chunked request bodies,
``Expect: 100-continue``, a 413 from the headers before an oversized body is read (then the
connection closes), HEAD without a body, 400 on malformed HTTP, graceful SIGTERM/SIGINT.

Hostile clients are bounded: each phase of a connection has a deadline fixed when the phase
begins, so a trickle of bytes never extends it (idle between requests: the keep-alive timeout;
request line and headers: the header timeout, then a 408; body: the body timeout, then a 408);
headers are capped in bytes (431); a client that pipelines without reading its answers stops
being read; and open connections are capped below the file limit: at the cap, the oldest idle
connection (else the oldest still sending its request) is closed to admit the new one, so
``/health`` and new requests are served while stalled clients hold thousands of sockets.
Bytes past a ``Content-Length`` body are the next request, as HTTP/1.1 says: answered in order,
and a 400 (then close) when they are not HTTP.
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
from tokenbridge.server import memory
from tokenbridge.server.app import JSON_HEADERS, App

SHUTDOWN_GRACE_S = 10.0
MAX_HEADER_BYTES = 64 * 1024  # request line and headers together
MAX_PIPELINED = 32  # queued requests of one connection before it is no longer read
_REASONS = {
    200: b"OK", 400: b"Bad Request", 401: b"Unauthorized", 404: b"Not Found",
    405: b"Method Not Allowed", 408: b"Request Timeout", 413: b"Request Entity Too Large",
    422: b"Unprocessable Entity", 431: b"Request Header Fields Too Large",
    500: b"Internal Server Error", 501: b"Not Implemented", 503: b"Service Unavailable",
}


def _plain_close(status: int, text: bytes) -> bytes:
    """A whole response that ends the connection, for errors found below the app."""
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
        b"content-length: %d\r\n\r\n%s" % (status, _REASONS[status], len(text), text)
    )


_STATUS_LINES = {status: b"HTTP/1.1 %d %s\r\n" % (status, reason) for status, reason in _REASONS.items()}
_JSON_HEADER_LINES = b"".join(b"%s: %s\r\n" % pair for pair in JSON_HEADERS)
_METHODS = {m.encode(): m for m in ("GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH")}
_BAD_REQUEST = _plain_close(400, b"Invalid HTTP request received.")
_TIMEOUT = _plain_close(408, b"Request timed out.")
_HEADERS_TOO_LARGE = _plain_close(431, b"Request headers are too large.")


class _StopParsing(Exception):
    """Raised from a parser callback to stop reading a body that will not be read."""


class _HeadersTooLarge(Exception):
    """Raised from a parser callback when the request line and headers pass ``MAX_HEADER_BYTES``."""


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

    def __init__(self, method: str, path: str, headers: dict[bytes, bytes]) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.chunks: list[bytes] = []
        self.size = 0
        self.too_large = False
        self.keep_alive = True


class HttpProtocol(asyncio.Protocol):
    """One connection: parse, queue complete requests, answer them one at a time in order."""

    def __init__(self, app: App, server: "Server", passed_in: bool = False) -> None:
        self.app = app
        self.server = server
        self.passed_in = passed_in  # passed on by another worker: never passed on again
        self.counted = False  # in this worker's open-connection count
        self.limit = app.cfg.max_body_bytes
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.queue: collections.deque[_Request] = collections.deque()
        self.current: _Request | None = None  # being parsed
        self.url = b""
        self.headers: dict[bytes, bytes] = {}
        self.header_bytes = 0
        self.busy = False  # a request is being answered asynchronously
        self.closing = False
        # The current phase's deadline (loop time; None: none), and one timer that fires at or
        # before it: a phase sets a number, and the timer, when early, re-arms for the deadline.
        self.deadline: float | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = 0.0
        self.phase = "idle"  # idle | headers | body | answering | stalled (answers unread)
        self.rejected = False  # an oversized body: answered, the rest is never read
        self.task: asyncio.Task | None = None  # the request answered asynchronously, if any
        self.writable: asyncio.Future | None = None  # set when the transport drains
        self.broken: bytes | None = None  # a final error to send once the queue is answered
        self.in_message = False  # a request has begun and is not yet complete
        self.read_paused = False
        self.write_paused = False

    # -- connection -----------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        fleet = self.server.fleet
        if fleet is not None and not self.passed_in and not self.server.stopping and self._pass_on(fleet):
            return
        if not self.server.admit(self):
            self.close()
            return
        if fleet is not None:
            fleet.opened()
            self.counted = True
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self._enter("idle", self.server.limits.keep_alive_s)

    def _pass_on(self, fleet) -> bool:
        """Hand this new connection to a worker with fewer open ones, before reading from it."""
        slot = fleet.lighter()
        sock = self.transport.get_extra_info("socket")
        if slot is None or sock is None or not fleet.pass_on(sock.fileno(), slot):
            return False
        self.closing = True
        self.transport.abort()  # our descriptor only: the other worker holds the connection
        return True

    def connection_lost(self, exc) -> None:
        self.closing = True
        if self.counted:
            self.counted = False
            self.server.fleet.closed()
        self.server.connections.pop(self, None)
        self.deadline = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.task is not None and not self.task.done():
            self.task.cancel()  # the client is gone: a gateway request aborts its engine request
        self._release_writer()

    def _release_writer(self) -> None:
        """Wake a streamed answer waiting for the transport to drain."""
        w, self.writable = self.writable, None
        if w is not None and not w.done():
            w.set_result(None)

    def _enter(self, phase: str, seconds: float | None) -> None:
        """Start a phase with a fixed deadline (None: no deadline); bytes never move it."""
        self.phase = phase
        if seconds is None:
            self.deadline = None
            return
        loop = self.server.loop
        self.deadline = deadline = loop.time() + seconds
        if self.timer is None or self.timer_at > deadline:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_at = deadline
            self.timer = loop.call_at(deadline, self._timer_fired)

    def _timer_fired(self) -> None:
        self.timer = None
        deadline = self.deadline
        if deadline is None or self.closing:
            return
        if deadline > self.server.loop.time():  # a later phase began since: wait for its deadline
            self.timer_at = deadline
            self.timer = self.server.loop.call_at(deadline, self._timer_fired)
            return
        self._expired()

    def _expired(self) -> None:
        self.deadline = None
        if self.phase == "idle":
            self.close()
        elif self.phase == "stalled":
            self.transport.abort()
        elif self.phase in ("headers", "body") and not self.busy and not self.queue:
            self.transport.write(_TIMEOUT)
            self.close()
        else:  # earlier pipelined requests are still being answered: answer them first
            self.current = None
            self._fail(_TIMEOUT)

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            self.transport.close()

    def is_idle(self) -> bool:
        return not self.busy and not self.queue and self.current is None

    def is_answering(self) -> bool:
        return self.busy or bool(self.queue)

    def pause_writing(self) -> None:
        """The client is not reading its answers: stop answering and reading until it does,
        for at most the body timeout (a streamed answer waits on ``writable``)."""
        if self.writable is None:
            self.writable = self.server.loop.create_future()
        self.write_paused = True
        self._pause_reading()
        self._enter("stalled", self.server.limits.body_timeout_s)

    def resume_writing(self) -> None:
        self._release_writer()
        self.write_paused = False
        if self.closing:
            return
        if self.in_message:
            self._enter("body", self.server.limits.body_timeout_s)
        else:
            self._enter("answering", None)
        self._drain()

    def _pause_reading(self) -> None:
        if not self.read_paused and not self.closing:
            self.read_paused = True
            self.transport.pause_reading()

    def _fail(self, response: bytes) -> None:
        """Stop reading; once the queued requests are answered, send ``response`` and close."""
        self.broken = response
        self._pause_reading()
        self._drain()

    def data_received(self, data: bytes) -> None:
        if self.closing or self.broken is not None:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # No upgrades: answer the request as plain HTTP, then close (the rest is not HTTP).
            req, self.current = self.current, None
            if req is not None:
                req.keep_alive = False
                self.queue.append(req)
        except httptools.HttpParserError as e:
            if isinstance(e.__context__, _HeadersTooLarge):
                self.current = None
                self._fail(_HEADERS_TOO_LARGE)
                return
            if not self.rejected:
                self.current = None
                self._fail(_BAD_REQUEST)
                return
        if len(self.queue) >= MAX_PIPELINED:
            self._pause_reading()
        self._drain()

    # -- httptools callbacks --------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.in_message = True
        self.url = b""
        self.headers = {}
        self.header_bytes = 0
        self._enter("headers", self.server.limits.header_timeout_s)

    def on_url(self, url: bytes) -> None:
        self.header_bytes += len(url)
        if self.header_bytes > MAX_HEADER_BYTES:
            raise _HeadersTooLarge
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_bytes += len(name) + len(value) + 4
        if self.header_bytes > MAX_HEADER_BYTES:
            raise _HeadersTooLarge
        self.headers[name.lower()] = value  # a repeated header: the last one, as dict() of the list

    def on_headers_complete(self) -> None:
        self._enter("body", self.server.limits.body_timeout_s)
        paths = self.server.paths
        path = paths.get(self.url)
        if path is None:
            path = unquote(httptools.parse_url(self.url).path.decode("ascii"))
            if len(paths) < 256:
                paths[self.url] = path
        req = _Request(_METHODS.get(self.parser.get_method()) or self.parser.get_method().decode("ascii"), path,
                       self.headers)
        self.current = req
        headers = self.headers
        declared = headers.get(b"content-length")
        expect = b"expect" in headers and headers[b"expect"].lower() == b"100-continue"
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
        self._pause_reading()
        raise _StopParsing

    def on_message_complete(self) -> None:
        req = self.current
        if req is None:
            return
        self.current = None
        self.in_message = False
        self._enter("answering", None)
        req.keep_alive = self.parser.should_keep_alive()
        self.queue.append(req)

    # -- answering ------------------------------------------------------------------------

    def _drain(self) -> None:
        """Answer queued requests in order; a request that suspends finishes on a task."""
        while self.queue and not self.busy and not self.write_paused and not self.transport.is_closing():
            req = self.queue.popleft()
            t0 = time.perf_counter()
            chunks, req.chunks = req.chunks, []
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            result = self.app.answer(req.method, req.path, req.headers, body)
            del chunks, body
            if type(result) is tuple:
                self._respond(req, result, t0)
                continue
            self.busy = True
            self.task = self.server.loop.create_task(self._finish(req, result, t0))
            return
        if self.busy or self.queue or self.closing:
            return
        if self.broken is not None:
            self.transport.write(self.broken)
            self.close()
            return
        if self.read_paused and not self.rejected and not self.write_paused:
            self.read_paused = False
            self.transport.resume_reading()
        if not self.in_message and self.phase != "idle":
            self._enter("idle", self.server.limits.keep_alive_s)
            if self.server.stopping:
                self.close()

    async def _finish(self, req: _Request, pending, t0: float) -> None:
        """Await an answer that suspends; a cancelled task (the client left) cancels it."""
        try:
            result = await pending
        except BaseException:
            self.close()
            raise
        self.busy = False
        if not self.closing:
            self._respond(req, result, t0)
            self._drain()

    def _respond(self, req: _Request, result, t0: float) -> None:
        status, headers, payload = result
        out = [_STATUS_LINES.get(status) or b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b"")), _Date.get()]
        if headers is JSON_HEADERS:
            out.append(_JSON_HEADER_LINES)
        else:
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
        out.append(b"content-length: %d\r\n\r\n" % len(payload))
        if req.method != "HEAD":
            out.append(payload)
        self.transport.write(b"".join(out))
        self.app.observe(req.method, req.path, status, time.perf_counter() - t0, req.size, len(payload))
        if req.size + len(payload) >= memory.TRIM_AFTER_BYTES:
            self.app.heap.after_large_request(self.server.loop)
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


class Limits:
    """The per-connection deadlines and the connection cap (``ServeConfig``'s HTTP fields)."""

    def __init__(self, header_timeout_s: float, body_timeout_s: float, keep_alive_s: float, max_connections: int):
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.keep_alive_s = keep_alive_s
        self.max_connections = max_connections

    @classmethod
    def from_config(cls, cfg) -> "Limits":
        cap = cfg.max_connections or default_max_connections()
        return cls(cfg.header_timeout_s, cfg.body_timeout_s, cfg.keep_alive_s, cap)


def default_max_connections() -> int:
    """Below the file limit (raised to its hard maximum first), with room for the model's
    files, the listening sockets and the threads: a flood of sockets never reaches EMFILE."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > 1 << 20:
        hard = 1 << 20
    if soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        soft = hard
    return max(16, soft - max(64, soft // 10))


class Server:
    """Accepts on one socket; on SIGTERM/SIGINT stops accepting and finishes in-flight work."""

    def __init__(self, app: App, ssl=None, grace_s: float = SHUTDOWN_GRACE_S, fleet=None, on_serving=None) -> None:
        self.app = app
        self.on_serving = on_serving  # called once connections are answered
        self.fleet = fleet  # the workers.Fleet this worker belongs to (None: the only one)
        self.ssl = ssl
        self.grace_s = grace_s
        self.limits = Limits.from_config(app.cfg)
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        # Open connections, oldest first (a dict keeps insertion order).
        self.connections: dict[HttpProtocol, None] = {}
        self.paths: dict[bytes, str] = {}  # request targets seen -> their unquoted path
        self.stopping = False

    def admit(self, conn: HttpProtocol) -> bool:
        """Count a new connection; at the cap, close the oldest idle one (else the oldest that
        is still sending its request; else, when every one is being answered, the new one)."""
        if len(self.connections) >= self.limits.max_connections:
            victim = next((c for c in self.connections if c.is_idle() and c.phase == "idle"), None)
            if victim is None:
                victim = next((c for c in self.connections if not c.is_answering()), None)
            if victim is None:
                return False
            self.connections.pop(victim, None)
            victim.close()
        self.connections[conn] = None
        return True

    def _receive(self) -> None:
        """Connections another worker passed on: served here as if accepted here."""
        try:
            _, fds, _, _ = socket.recv_fds(self.fleet.inbox, 16, 64)
        except OSError:
            return
        for fd in fds:
            self.loop.create_task(self._adopt(socket.socket(fileno=fd)))

    async def _adopt(self, sock: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(lambda: HttpProtocol(self.app, self, passed_in=True), sock,
                                                    ssl=self.ssl)
        except OSError:
            sock.close()

    async def serve(self, sock: socket.socket) -> None:
        self.loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, stop.set)
        server = await self.loop.create_server(
            lambda: HttpProtocol(self.app, self), sock=sock, backlog=2048, ssl=self.ssl
        )
        if self.fleet is not None:
            self.loop.add_reader(self.fleet.inbox.fileno(), self._receive)
        if self.on_serving is not None:
            self.on_serving()
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
        grace_s: float = SHUTDOWN_GRACE_S, fleet=None, on_serving=None) -> None:
    """Serve ``app`` on ``sock`` (a worker's inherited socket) or a fresh one on host:port;
    TLS with an ``ssl.SSLContext``; ``grace_s`` for in-flight requests after SIGTERM;
    ``on_serving()`` once connections are answered."""
    if sock is None:
        from tokenbridge.server.workers import bind_socket

        sock = bind_socket(host, port)
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(Server(app, ssl, grace_s, fleet, on_serving).serve(sock))
