"""Routes, body limits, auth and the error envelope, wire-compatible with ``vllm launch render``."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, Awaitable, Callable

import msgspec

from tokenbridge import VLLM_COMPAT_VERSION
from tokenbridge.config import ServeConfig
from tokenbridge.gateway.engine import EngineClient, EngineSettings
from tokenbridge.gateway.generation import SSE_HEADERS
from tokenbridge.gateway.sse import Streamed
from tokenbridge.server.logs import log
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol import lax
from tokenbridge.protocol.engine import GenerateRequest
from tokenbridge.protocol.errors import ApiError, not_found_model
from tokenbridge.protocol.ids import random_hex
from tokenbridge.server import handlers, memory
from tokenbridge.server.answer_memo import AnswerMemo
from tokenbridge.server.heavy import HeavyThread
from tokenbridge.server.metrics import Metrics

_fast_encode = msgspec.json.Encoder().encode


def _encode(obj: Any) -> bytes:
    """JSON bytes; ints beyond 64 bits (echoed from a request) go through the stdlib."""
    try:
        return _fast_encode(obj)
    except OverflowError:
        builtins = msgspec.to_builtins(obj, enc_hook=_raw_json)
        return json.dumps(builtins, ensure_ascii=False, separators=(",", ":")).encode()


def _raw_json(value: Any) -> Any:
    """``to_builtins`` of JSON kept encoded (``msgspec.Raw``: logprob bytes): its value."""
    if isinstance(value, msgspec.Raw):
        return msgspec.json.decode(value)
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


_JSON = [(b"content-type", b"application/json")]
# The headers of most answers: one shared tuple, whose header lines the server writes from
# bytes made once (http.py) instead of joining them per answer.
JSON_HEADERS = ((b"content-type", b"application/json"), (b"vary", b"Origin"))
_TEXT = [(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")]
_VARY = (b"vary", b"Origin")
# Bodies from this size on are handled on a thread, so short requests keep flowing on the event
# loop meanwhile. On ``tokenizers`` a long prompt's encode releases the GIL for milliseconds: from
# a ~10k-token prompt on. With fastokens the encode is ~1% of that and the template, which holds
# the GIL, is most of a render: the loop then gets the GIL back only at the interpreter's switch
# interval (5 ms), so a thread shortens the stall only for work longer than that (a long logprobs
# output, a prompt of ~50k tokens or more). Below, it would cost a thread hop per request and
# ~16 MB of fastokens caches for the thread that encodes. One such thread: a worker has one core.
OFFLOAD_BODY_BYTES = 32 * 1024
OFFLOAD_BODY_BYTES_FAST_ENCODER = 256 * 1024
# A lone surrogate, escaped (``\ud800``) or as its raw UTF-8-like bytes (ED A0..BF xx).
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf][\x80-\xbf]")

Handler = Callable[["Request"], Any]


class Request:
    __slots__ = ("body", "headers", "model", "cfg", "engine", "tokens", "fresh_id")

    def __init__(self, body: bytes, headers: dict[bytes, bytes], model: ModelContext, cfg: ServeConfig,
                 engine: EngineClient | None = None):
        self.body = body
        self.headers = headers
        self.model = model
        self.cfg = cfg
        self.engine = engine
        self.tokens = 0  # engine token ids a derender read (set by the handler)
        # The random request id a render's answer carries, set by a handler when nothing but
        # the body and this id decides the answer, so it may be kept (server/answer_memo.py).
        self.fresh_id: str | None = None

    def json(self) -> Any:
        """The parsed body (``json.loads`` semantics); 400 json_invalid when it is not JSON."""
        return lax.parse_json(self.body)

    def decode(self, typ: type, obj: Any = None, after: Callable[[Any], None] | None = None) -> Any:
        """The body as ``typ`` with pydantic-lax coercions, then ``after`` (the schema's
        after-validators, which vLLM runs before it looks at the model); 404 for a model not
        served."""
        obj = lax.convert(self.json() if obj is None else obj, typ)
        if after is not None:
            after(obj)
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
# The route whose answer its handler may mark as kept whole (server/answer_memo.py).
MEMO_ROUTE = "/v1/chat/completions/render"
# Liveness probes must not need the key; every other route does.
_NO_AUTH = {"/health"}
_DOC_ROUTES = {"/openapi.json", "/docs"}
_ALL_METHODS = b"DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"


class App:
    """The ASGI application; everything it needs is built before the first request."""

    def __init__(self, model: ModelContext, cfg: ServeConfig) -> None:
        self.model = model
        self.cfg = cfg
        self.metrics = Metrics()
        self.started = time.time()
        self._heavy: HeavyThread | None = None
        self.heap = memory.HeapRelease()  # after large requests, and after the heavy thread ends
        self.engine: EngineClient | None = None
        self.post_routes = POST_ROUTES
        if cfg.engine_url:
            self.engine = EngineClient(EngineSettings(
                cfg.engine_url, cfg.engine_api_key, cfg.engine_connect_timeout,
                cfg.engine_first_token_timeout, cfg.engine_idle_timeout,
            ))
            self.post_routes = {**POST_ROUTES, **ENGINE_ROUTES}
        self._auth = {f"Bearer {k}".encode() for k in cfg.api_keys}
        self._log_requests = cfg.access is not None and cfg.access.requests
        self._routes_seen: dict[str, str] = {}  # request path -> its metrics route label
        self._docs: dict[str, bytes] = {}
        self.answer_memo = AnswerMemo()

    def _offload_bytes(self) -> int:
        fast = getattr(self.model.tokenizer, "backend", None) == "fastokens"
        return OFFLOAD_BODY_BYTES_FAST_ENCODER if fast else OFFLOAD_BODY_BYTES

    def _run_heavy(self, handler: Handler, request: "Request"):
        loop = asyncio.get_running_loop()
        if self._heavy is None:
            self._heavy = HeavyThread(on_end=lambda: self._release_after_heavy(loop))
        return loop.run_in_executor(self._heavy, handler, request)

    def _release_after_heavy(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs on the heavy thread as it ends: what it cached is freed just after, so the heap
        is given back a release interval later."""
        try:
            loop.call_soon_threadsafe(self.heap.after_large_request, loop)
        except RuntimeError:  # the loop is closed: the process is ending
            pass

    async def __call__(self, scope, receive, send) -> None:
        """The ASGI entry (``TOKENBRIDGE_HTTP=uvicorn``): read the body, then ``answer``."""
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
        headers = dict(scope["headers"])
        chunks, size = [], 0
        while size <= self.cfg.max_body_bytes:  # past the limit ``answer`` says 413
            msg = await receive()
            part = msg.get("body", b"")
            size += len(part)
            chunks.append(part)
            if not msg.get("more_body"):
                break
        result = self.answer(method, path, headers, b"".join(chunks))
        status, out_headers, payload = result if type(result) is tuple else await result
        await send({"type": "http.response.start", "status": status, "headers": out_headers})
        if isinstance(payload, Streamed):
            try:
                async for piece in payload.chunks:
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
            finally:
                await payload.chunks.aclose()
            payload = b""
        await send({"type": "http.response.body", "body": payload})
        self.observe(method, path, status, time.perf_counter() - t0, size, len(payload))

    def observe(self, method: str, path: str, status: int, seconds: float, size_in: int, size_out: int) -> None:
        """After each answer: metrics, and the access line when ``--enable-log-requests``."""
        route = self._routes_seen.get(path)
        if route is None:
            route = self._metrics_route(path)
            if len(self._routes_seen) < 256:
                self._routes_seen[path] = route
        self.metrics.observe(method, route, status, seconds, size_in, size_out)
        if self._log_requests:
            log.info('"%s %s" %d %.1fms', method, path, status, seconds * 1000,
                     extra={"method": method, "path": path, "status": status, "ms": round(seconds * 1000, 3)})

    def _metrics_route(self, path: str) -> str:
        """The route label of ``path``: unknown paths share one, as vLLM's instrumentator groups them."""
        root = self.cfg.root_path
        route = path[len(root):] or "/" if root and path.startswith(root) else path
        if route in self.post_routes or route in GET_ROUTES or route in _DOC_ROUTES or route == "/metrics":
            return route
        return "none"

    def answer(self, method: str, path: str, headers: dict[bytes, bytes], body: bytes):
        """One request: ``(status, headers, payload)``, or an awaitable of it when the handler
        suspends (the engine, a body handled on a thread); the server runs that on a task.
        Root path, CORS, request ids and error logs are here, around ``_route``."""
        cfg = self.cfg
        if cfg.root_path and path.startswith(cfg.root_path):
            path = path[len(cfg.root_path):] or "/"
        origin = None
        if cfg.cors_origins:
            origin = headers.get(b"origin")
            if origin is not None and method == "OPTIONS" and b"access-control-request-method" in headers:
                return self._preflight(origin, headers)
        metrics = self.metrics
        metrics.in_flight += 1
        try:
            result = self._route(method, path, headers, body)
        except BaseException:
            metrics.in_flight -= 1
            raise
        if type(result) is tuple:
            metrics.in_flight -= 1
            if result[0] >= 400 or cfg.request_id_headers or origin is not None:
                return self._decorate(result, method, path, headers, origin)
            return result
        return self._answer_later(result, method, path, headers, origin)

    async def _answer_later(self, pending: Awaitable, method: str, path: str, headers: dict, origin):
        try:
            result = await pending
        finally:
            self.metrics.in_flight -= 1
        return self._decorate(result, method, path, headers, origin)

    def _decorate(self, result, method: str, path: str, headers: dict, origin):
        """The error log line, ``X-Request-Id`` and CORS headers of an answer."""
        status, out, payload = result
        cfg = self.cfg
        rid = None
        if status >= 400 or cfg.request_id_headers:
            rid = headers.get(b"x-request-id") or random_hex(16).encode()
        if status >= 400:
            detail = payload[:500].decode("utf-8", "replace")
            level = 40 if status >= 500 else 20
            log.log(level, "request %s: %s %s -> %d %s", rid.decode("latin-1"), method, path, status, detail,
                    extra={"request_id": rid.decode("latin-1"), "method": method, "path": path, "status": status})
        if cfg.request_id_headers:
            out = [*out, (b"x-request-id", rid)]
        if origin is not None and self._origin_allowed(origin):
            out = [*out, *self._cors_headers(origin)]
        return status, out, payload

    def _origin_allowed(self, origin: bytes) -> bool:
        return "*" in self.cfg.cors_origins or origin.decode("latin-1") in self.cfg.cors_origins

    def _cors_headers(self, origin: bytes) -> list[tuple[bytes, bytes]]:
        cfg = self.cfg
        star = "*" in cfg.cors_origins and not cfg.cors_credentials
        out = [(b"access-control-allow-origin", b"*" if star else origin)]
        if cfg.cors_credentials:
            out.append((b"access-control-allow-credentials", b"true"))
        return out

    def _preflight(self, origin: bytes, hd: dict):
        """A CORS preflight, answered as Starlette's CORSMiddleware (vLLM's) answers it."""
        cfg = self.cfg
        if not self._origin_allowed(origin):
            return 400, [(b"content-type", b"text/plain; charset=utf-8"), _VARY], b"Disallowed CORS origin"
        methods = _ALL_METHODS if "*" in cfg.cors_methods else ", ".join(cfg.cors_methods).encode()
        if "*" in cfg.cors_headers:
            allow_headers = hd.get(b"access-control-request-headers", b"")
        else:
            allow_headers = ", ".join(cfg.cors_headers).encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"), _VARY, *self._cors_headers(origin),
            (b"access-control-allow-methods", methods), (b"access-control-max-age", b"600"),
        ]
        if allow_headers:
            headers.append((b"access-control-allow-headers", allow_headers))
        return 200, headers, b"OK"

    def _count_tokens(self, path: str, request: "Request", result: Any) -> None:
        if path.endswith("/derender"):
            self.metrics.tokens(path, derendered=request.tokens)
        elif isinstance(result, GenerateRequest):
            self.metrics.tokens(path, rendered=len(result.token_ids))
        elif isinstance(result, dict):
            self.metrics.tokens(path, rendered=len(result.get("token_ids") or ()) or result.get("count") or 0)
        elif isinstance(result, list):
            self.metrics.tokens(path, rendered=sum(len(d.token_ids) for d in result if isinstance(d, GenerateRequest)))

    def _doc(self, path: str) -> bytes:
        if path not in self._docs:
            from tokenbridge.server import openapi

            spec = openapi.document(self.cfg.root_path)
            self._docs["/openapi.json"] = json.dumps(spec, separators=(",", ":")).encode()
            self._docs["/docs"] = openapi.docs_page(self.cfg.root_path + "/openapi.json")
        return self._docs[path]

    def _route(self, method: str, path: str, headers: dict[bytes, bytes], body: bytes):
        if path == "/metrics" and method == "GET":
            return self._scrape()
        if path in _DOC_ROUTES and self.cfg.docs and method in ("GET", "HEAD"):
            ctype = b"application/json" if path == "/openapi.json" else b"text/html; charset=utf-8"
            return 200, [(b"content-type", ctype), _VARY], self._doc(path)
        table = self.post_routes if method == "POST" else GET_ROUTES if method in ("GET", "HEAD") else None
        handler = table.get(path) if table is not None else None
        if handler is None:
            known = path in self.post_routes or path in GET_ROUTES or path == "/metrics"
            if known:
                return 405, [*_JSON, _VARY], b'{"detail":"Method Not Allowed"}'
            return 404, [*_JSON, _VARY], b'{"detail":"Not Found"}'
        try:
            if self._auth and path not in _NO_AUTH:
                if headers.get(b"authorization", b"") not in self._auth:
                    return 401, [*_JSON, _VARY], b'{"error":"Unauthorized"}'
            if method == "POST":
                limit = self.cfg.max_body_bytes
                declared = headers.get(b"content-length")
                if len(body) > limit or declared is not None and declared.isdigit() and int(declared) > limit:
                    raise ApiError(f"Request body exceeds the limit of {limit} bytes.", 413, "RequestEntityTooLarge")
                if path not in ("/invocations", "/ping"):
                    ctype = headers.get(b"content-type", b"")
                    if ctype != b"application/json" and ctype.split(b";")[0].strip().lower() != b"application/json":
                        raise ApiError(
                            "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed",
                            400,
                            "Bad Request",
                        )
                if len(body) in self.answer_memo.lengths and path == MEMO_ROUTE and b"x-request-id" not in headers:
                    kept = self.answer_memo.get(path, body)
                    if kept is not None:
                        self.metrics.tokens(path, rendered=kept.tokens)
                        return 200, JSON_HEADERS, kept.with_id(random_hex(8))
            else:
                body = b""
            request = Request(body, headers, self.model, self.cfg, self.engine)
            if len(body) >= self._offload_bytes():
                return self._result_later(path, request, self._run_heavy(handler, request))
            result = handler(request)
            if hasattr(type(result), "__await__"):
                return self._result_later(path, request, result)
            if request.fresh_id is not None and path == MEMO_ROUTE:
                return self._result_kept(path, request, result)
            return self._result(path, request, result)
        except Exception as e:
            return self._error(e, body)

    async def _result_later(self, path: str, request: "Request", pending: Awaitable):
        try:
            return self._result(path, request, await pending)
        except Exception as e:
            return self._error(e, request.body)

    def _result_kept(self, path: str, request: "Request", result: Any):
        """A render's answer, offered to the answer memo (never one that needs the stdlib's
        encode: that path is for ints past 64 bits, kept out of the memo)."""
        try:
            payload = _fast_encode(result)
        except OverflowError:
            return self._result(path, request, result)
        self._count_tokens(path, request, result)
        if type(result) is GenerateRequest and b"x-request-id" not in request.headers:
            self.answer_memo.offer(path, request.body, payload, request.fresh_id, len(result.token_ids))
        return 200, JSON_HEADERS, payload

    async def _scrape(self):
        return 200, [*_TEXT, _VARY], await self.metrics.render()

    def _result(self, path: str, request: "Request", result: Any):
        self._count_tokens(path, request, result)
        if result is None:
            return 200, [_VARY], b""
        if isinstance(result, Streamed):
            return 200, [*SSE_HEADERS, _VARY], result
        if isinstance(result, bytes):
            return 200, JSON_HEADERS, result
        return 200, JSON_HEADERS, _encode(result)

    def _error(self, e: Exception, body: bytes):
        """An exception as the error envelope: ours as they say, a bug as a 500."""
        if isinstance(e, lax.BodyParseError):
            return 400, [*_JSON, _VARY], lax.BodyParseError.BODY
        if isinstance(e, ApiError):
            try:
                return e.status, [*_JSON, _VARY], _encode(e.envelope())
            except UnicodeError:  # a lone surrogate echoed in the message: vLLM fails with a 400
                err = ApiError(e.message.encode("utf-8", "replace").decode())
                return 400, [*_JSON, _VARY], _encode(err.envelope())
        if isinstance(e, (UnicodeError, OverflowError)) or _LONE_SURROGATE.search(body):
            # vLLM fails the same way on lone surrogates (tokenizer, UTF-8 encoding): a 400
            err = ApiError(str(e).encode("utf-8", "replace").decode())
        else:  # a bug must still answer in the envelope
            err = ApiError(f"{type(e).__name__}: {e}", 500, "InternalServerError")
        return err.status, [*_JSON, _VARY], _encode(err.envelope())
