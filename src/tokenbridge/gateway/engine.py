"""The engine client: vLLM's ``POST /inference/v1/generate`` (SSE of token-id deltas) and
``POST /inference/v1/abort_requests``, over pooled keep-alive connections.

aiohttp was chosen by measurement (``bench/engine_client_bench.py``): of httpx and aiohttp it
costs the least CPU per SSE event read. The SSE is split here, a read at a time, so several
events in one TCP read cost one wake-up. The response body is read only as fast as the
caller consumes it: aiohttp's reader stops reading the socket past its high-water mark, so a
slow client slows the engine read instead of growing a buffer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import AsyncIterator

import msgspec

from tokenbridge.protocol.engine import GenerateChunk
from tokenbridge.protocol.errors import ApiError

GENERATE_PATH = "/inference/v1/generate"
ABORT_PATH = "/inference/v1/abort_requests"
_DONE = b"[DONE]"


@dataclass(frozen=True)
class EngineSettings:
    url: str
    api_key: str | None = None
    connect_timeout: float = 10.0
    first_token_timeout: float = 600.0
    idle_timeout: float = 120.0
    max_connections: int = 1024


class EngineStreamError(Exception):
    """The engine stream broke after it started: the client gets an error event, then [DONE]."""

    def __init__(self, message: str, status: int = 502, type: str = "BadGatewayError") -> None:
        super().__init__(message)
        self.error = ApiError(message, status, type)


class _EngineError(msgspec.Struct):
    error: dict


_chunk_decoder = msgspec.json.Decoder(GenerateChunk)
_error_decoder = msgspec.json.Decoder(_EngineError)


def decode_event(data: bytes) -> GenerateChunk:
    """One SSE ``data`` payload as a chunk; the engine's error event or bad JSON raises."""
    try:
        return _chunk_decoder.decode(data)
    except msgspec.DecodeError:
        pass
    try:
        err = _error_decoder.decode(data).error
    except msgspec.DecodeError:
        raise EngineStreamError(f"malformed engine event: {data[:200]!r}") from None
    code = err.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else 500
    raise EngineStreamError(str(err.get("message", "engine error")), status, str(err.get("type", "InternalServerError")))


def split_events(buf: bytes) -> tuple[list[bytes], bytes]:
    """Complete SSE events' ``data`` payloads in ``buf`` and the unfinished rest."""
    if b"\r" in buf:
        buf = buf.replace(b"\r\n", b"\n")
    *events, rest = buf.split(b"\n\n")
    out = []
    for ev in events:
        if ev.startswith(b"data: ") and b"\n" not in ev:  # the engine's one-line event
            out.append(ev[6:])
            continue
        data = [line[5:] for line in ev.split(b"\n") if line.startswith(b"data:")]
        if data:  # comments (":") and other fields carry no payload
            out.append(b"\n".join(d[1:] if d[:1] == b" " else d for d in data))
    return out, rest


class _Watchdog:
    """Fails the read that waits too long: the first event within ``first`` seconds, each
    later one within ``idle`` of the previous. One timer per stream, re-armed lazily."""

    __slots__ = ("loop", "reader", "first", "idle", "last", "started", "handle")

    def __init__(self, reader, first: float, idle: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.reader = reader
        self.first = first
        self.idle = idle
        self.started = False
        self.last = self.loop.time()
        self.handle = self.loop.call_at(self.last + first, self._check)

    def seen(self) -> None:
        self.last = self.loop.time()
        self.started = True

    def _check(self) -> None:
        limit = self.idle if self.started else self.first
        due = self.last + limit
        if self.loop.time() >= due:
            what = "between tokens" if self.started else "for the first token"
            self.reader.set_exception(
                EngineStreamError(f"the engine sent nothing {what} for {limit:g} s", 504, "GatewayTimeoutError")
            )
            return
        self.handle = self.loop.call_at(due, self._check)

    def cancel(self) -> None:
        self.handle.cancel()


class EngineStream:
    """One generate response being read: ``async for batch in stream.batches()`` then ``close``."""

    def __init__(self, response, settings: EngineSettings) -> None:
        self.response = response
        self.watchdog = _Watchdog(response.content, settings.first_token_timeout, settings.idle_timeout)
        self.done = False  # the engine sent data: [DONE]

    async def batches(self) -> AsyncIterator[list[GenerateChunk]]:
        """The chunks of each socket read, in order. A gateway behind on a busy core finds
        many events per read; handling them as one batch makes one write to the client."""
        reader = self.response.content
        rest = b""
        try:
            while True:
                try:
                    data = await reader.readany()
                except EngineStreamError:
                    raise
                except Exception as e:  # the connection broke mid-stream
                    raise EngineStreamError(f"the engine stream broke: {type(e).__name__}: {e}") from None
                if not data:
                    raise EngineStreamError("the engine stream ended without data: [DONE]")
                self.watchdog.seen()
                events, rest = split_events(rest + data if rest else data)
                batch = []
                try:
                    for payload in events:
                        if payload == _DONE:
                            self.done = True
                            break
                        batch.append(decode_event(payload))
                except EngineStreamError:
                    if batch:  # what came before the bad event is answered first
                        yield batch
                    raise
                if batch:
                    yield batch
                if self.done:
                    return
        finally:
            self.watchdog.cancel()

    def close(self) -> None:
        self.watchdog.cancel()
        self.response.release()

    def drop(self) -> None:
        """Close the connection rather than return it to the pool (the body was not read)."""
        self.watchdog.cancel()
        self.response.close()


def _error_from_body(status: int, raw: bytes) -> ApiError:
    """An engine 4xx in our envelope (its message, type and status); a 5xx as 502."""
    message, etype, param = raw.decode("utf-8", "replace")[:2000] or f"HTTP {status}", None, None
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = str(err.get("message", message))
            etype = err.get("type")
            param = err.get("param")
        elif "detail" in body:
            message = str(body["detail"])
    if 400 <= status < 500:
        return ApiError(message, status, str(etype or "BadRequestError"), param if isinstance(param, str) else None)
    return ApiError(f"The engine failed with HTTP {status}: {message}", 502, "BadGatewayError")


class EngineClient:
    """A pool of keep-alive connections to one engine URL, made on first use in the worker's loop."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self.base = settings.url.rstrip("/")
        self._session = None

    def session(self):
        if self._session is None:
            import aiohttp

            s = self.settings
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=s.max_connections, keepalive_timeout=60, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=None, connect=s.connect_timeout, sock_connect=s.connect_timeout),
                auto_decompress=False,
                skip_auto_headers=("User-Agent",),
            )
        return self._session

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        h = {"content-type": "application/json", **extra}
        if self.settings.api_key:
            h["authorization"] = f"Bearer {self.settings.api_key}"
        return h

    async def generate(self, body: bytes, headers: dict[str, str]) -> EngineStream:
        """Send one GenerateRequest; the stream once the engine answered 200, else the error."""
        import aiohttp

        try:
            resp = await self.session().post(self.base + GENERATE_PATH, data=body, headers=self._headers(headers))
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, asyncio.TimeoutError, OSError) as e:
            raise ApiError(
                f"The engine at {self.base} is unreachable: {type(e).__name__}: {e}", 503, "ServiceUnavailableError"
            ) from None
        if resp.status != 200:
            try:
                raw = await resp.read()
            except Exception:
                raw = b""
            resp.release()
            raise _error_from_body(resp.status, raw)
        return EngineStream(resp, self.settings)

    async def abort(self, request_ids: list[str]) -> bool:
        """Ask the engine to stop generating; failures only cost the engine some work."""
        try:
            async with self.session().post(
                self.base + ABORT_PATH,
                data=msgspec.json.encode({"request_ids": request_ids}),
                headers=self._headers({}),
            ) as resp:
                await resp.read()
                return resp.status == 200
        except Exception:
            return False

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
