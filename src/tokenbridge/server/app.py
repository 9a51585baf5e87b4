"""Routes, body limits, auth and the error envelope, wire-compatible with ``vllm launch render``."""

from __future__ import annotations

import asyncio
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable

import msgspec

from tokenbridge import VLLM_COMPAT_VERSION
from tokenbridge.config import ServeConfig
from tokenbridge.gateway.engine import EngineClient, EngineSettings
from tokenbridge.gateway.generation import SSE_HEADERS
from tokenbridge.gateway.sse import Streamed
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol import lax
from tokenbridge.protocol.errors import ApiError, not_found_model
from tokenbridge.server import handlers
from tokenbridge.server.metrics import Metrics

_fast_encode = msgspec.json.Encoder().encode


def _encode(obj: Any) -> bytes:
    """JSON bytes; ints beyond 64 bits (echoed from a request) go through the stdlib."""
    try:
        return _fast_encode(obj)
    except OverflowError:
        return json.dumps(msgspec.to_builtins(obj), ensure_ascii=False, separators=(",", ":")).encode()


_JSON = [(b"content-type", b"application/json")]
_TEXT = [(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")]
_VARY = (b"vary", b"Origin")
# Bodies from this size on (a ~10k-token prompt, a long logprobs output) are handled on a
# thread: the encoder releases the GIL, so short requests keep flowing on the event loop.
OFFLOAD_BODY_BYTES = 32 * 1024
# A lone surrogate, escaped (``\ud800``) or as its raw UTF-8-like bytes (ED A0..BF xx).
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf][\x80-\xbf]")

Handler = Callable[["Request"], Any]


class Request:
    __slots__ = ("body", "headers", "model", "cfg", "engine")

    def __init__(self, body: bytes, headers: dict[bytes, bytes], model: ModelContext, cfg: ServeConfig,
                 engine: EngineClient | None = None):
        self.body = body
        self.headers = headers
        self.model = model
        self.cfg = cfg
        self.engine = engine

    def json(self) -> Any:
        """The parsed body (``json.loads`` semantics); 400 json_invalid when it is not JSON."""
        return lax.parse_json(self.body)

    def decode(self, typ: type, obj: Any = None) -> Any:
        """The body as ``typ`` with pydantic-lax coercions; 404 for a model not served."""
        obj = lax.convert(self.json() if obj is None else obj, typ)
        name = getattr(obj, "model", None)
        if name and name not in self.model.served_names:  # "" is no model named, as in vLLM
            raise not_found_model(name, self.model.served_names)
        return obj

    def request_id(self) -> str | None:
        v = self.headers.get(b"x-request-id")
        return v.decode("latin-1") if v else None


POST_ROUTES: dict[str, Handler] = {
    "/v1/chat/completions/render": handlers.chat_render,
    "/v1/completions/render": handlers.completion_render,
    "/v1/messages/render": handlers.messages_render,
    "/v1/responses/render": handlers.responses_render,
    "/v1/chat/completions/derender": handlers.chat_derender,
    "/v1/completions/derender": handlers.completion_derender,
    "/tokenize": handlers.tokenize,
    "/detokenize": handlers.detokenize,
    "/v1/decisions": handlers.not_implemented,
    "/v1/systemone": handlers.not_implemented,
    "/invocations": handlers.invocations,
    "/ping": handlers.empty,
}
# With --engine-url: the OpenAI frontend over the engine (gateway/).
ENGINE_ROUTES: dict[str, Handler] = {
    "/v1/chat/completions": handlers.chat_completions,
    "/v1/completions": handlers.completions,
}
GET_ROUTES: dict[str, Handler] = {
    "/v1/models": handlers.models,
    "/health": handlers.empty,
    "/ping": handlers.empty,
    "/version": lambda r: {"version": VLLM_COMPAT_VERSION},
    "/load": lambda r: {"server_load": 0},
    "/kv_event_sources": lambda r: {},
}
# Liveness probes must not need the key; every other route does.
_NO_AUTH = {"/health"}


class App:
    """The ASGI application; everything it needs is built before the first request."""

    def __init__(self, model: ModelContext, cfg: ServeConfig) -> None:
        self.model = model
        self.cfg = cfg
        self.metrics = Metrics()
        self.started = time.time()
        self._pool: ThreadPoolExecutor | None = None
        self.engine: EngineClient | None = None
        self.post_routes = POST_ROUTES
        if cfg.engine_url:
            self.engine = EngineClient(EngineSettings(
                cfg.engine_url, cfg.engine_api_key, cfg.engine_connect_timeout,
                cfg.engine_first_token_timeout, cfg.engine_idle_timeout,
            ))
            self.post_routes = {**POST_ROUTES, **ENGINE_ROUTES}

    def _run_heavy(self, handler: Handler, request: "Request"):
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tokenbridge-heavy")
        return asyncio.get_running_loop().run_in_executor(self._pool, handler, request)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope["path"]
        method = scope["method"]
        t0 = time.perf_counter()
        status, headers, payload = await self._handle(scope, receive, method, path)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        if isinstance(payload, Streamed):
            try:
                async for piece in payload.chunks:
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
            finally:
                await payload.chunks.aclose()
            payload = b""
        await send({"type": "http.response.body", "body": payload})
        self.metrics.observe(method, path, status, time.perf_counter() - t0)

    async def _handle(self, scope, receive, method: str, path: str):
        if path == "/metrics" and method == "GET":
            return 200, [*_TEXT, _VARY], self.metrics.render().encode()
        table = self.post_routes if method == "POST" else GET_ROUTES if method in ("GET", "HEAD") else None
        handler = table.get(path) if table is not None else None
        if handler is None:
            known = path in self.post_routes or path in GET_ROUTES or path == "/metrics"
            if known:
                return 405, [*_JSON, _VARY], b'{"detail":"Method Not Allowed"}'
            return 404, [*_JSON, _VARY], b'{"detail":"Not Found"}'
        headers = dict(scope["headers"])
        body = b""
        try:
            if self.cfg.api_key and path not in _NO_AUTH:
                auth = headers.get(b"authorization", b"").decode("latin-1")
                if auth != f"Bearer {self.cfg.api_key}":
                    return 401, [*_JSON, _VARY], b'{"error":"Unauthorized"}'
            body = b""
            if method == "POST":
                body = await self._read_body(receive, headers)
                if path not in ("/invocations", "/ping"):
                    ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
                    if ctype != b"application/json":
                        raise ApiError(
                            "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed",
                            400,
                            "Bad Request",
                        )
            request = Request(body, headers, self.model, self.cfg, self.engine)
            if len(body) >= OFFLOAD_BODY_BYTES:
                result = await self._run_heavy(handler, request)
            else:
                result = handler(request)
            if isinstance(result, Awaitable):
                result = await result
            if result is None:
                return 200, [_VARY], b""
            if isinstance(result, Streamed):
                return 200, [*SSE_HEADERS, _VARY], result
            if isinstance(result, bytes):
                return 200, [*_JSON, _VARY], result
            return 200, [*_JSON, _VARY], _encode(result)
        except lax.BodyParseError:
            return 400, [*_JSON, _VARY], lax.BodyParseError.BODY
        except ApiError as e:
            try:
                return e.status, [*_JSON, _VARY], _encode(e.envelope())
            except UnicodeError:  # a lone surrogate echoed in the message: vLLM fails with a 400
                err = ApiError(e.message.encode("utf-8", "replace").decode())
                return 400, [*_JSON, _VARY], _encode(err.envelope())
        except Exception as e:
            if isinstance(e, (UnicodeError, OverflowError)) or _LONE_SURROGATE.search(body):
                # vLLM fails the same way on lone surrogates (tokenizer, UTF-8 encoding): a 400
                err = ApiError(str(e).encode("utf-8", "replace").decode())
            else:  # a bug must still answer in the envelope
                err = ApiError(f"{type(e).__name__}: {e}", 500, "InternalServerError")
            return err.status, [*_JSON, _VARY], _encode(err.envelope())

    async def _read_body(self, receive, headers) -> bytes:
        limit = self.cfg.max_body_bytes
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ApiError(f"Request body exceeds the limit of {limit} bytes.", 413, "RequestEntityTooLarge")
        chunks = []
        size = 0
        while True:
            msg = await receive()
            part = msg.get("body", b"")
            size += len(part)
            if size > limit:
                raise ApiError(f"Request body exceeds the limit of {limit} bytes.", 413, "RequestEntityTooLarge")
            chunks.append(part)
            if not msg.get("more_body"):
                break
        return b"".join(chunks)
