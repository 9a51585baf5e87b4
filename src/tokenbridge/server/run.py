"""Process start-up: load the model once, listen, log the start-up line, serve in one or more workers.

The bare httptools server (``server/http.py``) serves by default; ``TOKENBRIDGE_HTTP=uvicorn``
selects uvicorn instead (same app, same answers).
"""

from __future__ import annotations

import os
import socket
import sys
import threading

from tokenbridge import __version__
from tokenbridge.config import ServeConfig, default_max_body_bytes
from tokenbridge.server.logs import log
from tokenbridge.model.context import ModelError, ModelLoader
from tokenbridge.server import memory, metrics
from tokenbridge.server.app import App

DEFAULT_GRACE_S = 10.0


def build(args, loader: ModelLoader | None = None, access=None) -> App:
    model = (loader or ModelLoader(args)).result()
    cfg = ServeConfig(
        tool_call_parser=args.tool_call_parser,
        reasoning_parser=args.reasoning_parser,
        enable_auto_tool_choice=args.enable_auto_tool_choice,
        chat_template_content_format=args.chat_template_content_format,
        default_chat_template_kwargs=args.default_chat_template_kwargs or {},
        trust_request_chat_template=args.trust_request_chat_template,
        max_logprobs=args.max_logprobs,
        api_keys=tuple(args.api_key or ()),
        max_body_bytes=args.max_body_bytes or default_max_body_bytes(model.max_model_len, args.max_logprobs),
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        keep_alive_s=args.keep_alive_timeout,
        max_connections=args.max_connections,
        root_path=(args.root_path or "").rstrip("/"),
        cors_origins=tuple(args.allowed_origins),
        cors_methods=tuple(args.allowed_methods),
        cors_headers=tuple(args.allowed_headers),
        cors_credentials=args.allow_credentials,
        request_id_headers=args.enable_request_id_headers,
        docs=not args.disable_fastapi_docs,
        access=access,
        engine_url=args.engine_url,
        engine_api_key=args.engine_api_key,
        engine_connect_timeout=args.engine_connect_timeout,
        engine_first_token_timeout=args.engine_first_token_timeout,
        engine_idle_timeout=args.engine_idle_timeout,
        tool_call_streaming=args.tool_call_streaming,
    )
    return App(model, cfg)


def tls_context(args):
    """vLLM's --ssl-* flags as an ``ssl.SSLContext`` (None without --ssl-certfile)."""
    if not args.ssl_certfile:
        return None
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(args.ssl_certfile, args.ssl_keyfile)
        if args.ssl_ca_certs:
            ctx.load_verify_locations(args.ssl_ca_certs)
        ctx.verify_mode = ssl.VerifyMode(args.ssl_cert_reqs)
        if args.ssl_ciphers:
            ctx.set_ciphers(args.ssl_ciphers)
    except (ssl.SSLError, ValueError, OSError) as e:
        raise ModelError(f"TLS: cannot use {args.ssl_certfile} / {args.ssl_keyfile}: {e}") from None
    return ctx


def listen(args, workers: int) -> socket.socket | None:
    """Bind now, so a taken port or a bad address is one clear line before any fork. A TCP socket
    for several workers is not returned: ``serve_workers`` binds its own ``SO_REUSEPORT`` ones."""
    where = args.uds or f"{args.host}:{args.port}"
    try:
        if args.uds:
            if os.path.exists(args.uds):
                os.unlink(args.uds)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(args.uds)
            sock.listen(2048)
            sock.set_inheritable(True)
            return sock
        from tokenbridge.server.workers import bind_socket

        sock = bind_socket(args.host, args.port)
        if workers == 1:
            return sock
        sock.close()  # the address is free; the workers' own sockets take it
        return None
    except OSError as e:
        raise ModelError(f"cannot listen on {where}: {e.strerror or e}") from None


def startup_line(app: App, args, workers: int, tls: bool, backend: str) -> str:
    scheme = "https" if tls else "http"
    where = f"unix:{args.uds}" if args.uds else f"{scheme}://{args.host}:{args.port}{args.root_path or ''}"
    from tokenbridge.derender import state

    key = {"file": "--stream-state-key-file", "env": "TOKENBRIDGE_STATE_KEY"}.get(
        state.secret_source(), "random per start (set TOKENBRIDGE_STATE_KEY to share streams across replicas)"
    )
    return (
        f"tokenbridge {__version__} serving {args.model} as {', '.join(app.model.served_names)} on {where}; "
        f"workers {workers}; tool parser {args.tool_call_parser or 'none'}, reasoning parser "
        f"{args.reasoning_parser or 'none'}; encoder {backend}; max model len {app.model.max_model_len}; "
        f"stream state key: {key}"
    )


def serve(args, loader: ModelLoader | None = None, access=None) -> int:
    if args.workers is None:
        from tokenbridge.server.workers import default_workers

        workers = default_workers()
    else:
        workers = max(1, args.workers)
    shared = metrics.share_across_workers() if workers > 1 else None
    try:
        try:
            app = build(args, loader, access)
        except ModelError as e:
            print(f"tokenbridge serve: error: {e}", file=sys.stderr)
            return 2
        except (OSError, ValueError) as e:
            print(f"tokenbridge serve: error: cannot load {args.model}: {e}", file=sys.stderr)
            return 2
        from tokenbridge.model.fast_backend import release_freed_memory

        release_freed_memory()
        memory.freeze_startup_objects()
        from tokenbridge.derender import state

        try:  # before forking: the workers share the secret
            if state.configure_secret(args.stream_state_key_file) == "random":
                log.warning(
                    "TOKENBRIDGE_STATE_KEY is not set: stream states are signed with a key made at this "
                    "start, so a stream cannot move to another replica or survive a restart. Set "
                    "TOKENBRIDGE_STATE_KEY or --stream-state-key-file to the same secret on every replica."
                )
        except ValueError as e:
            print(f"tokenbridge serve: error: {e}", file=sys.stderr)
            return 2
        try:
            tls = tls_context(args)
            sock = listen(args, workers)
        except ModelError as e:
            print(f"tokenbridge serve: error: {e}", file=sys.stderr)
            return 1
        # With workers, the backend is chosen before forking, so they share one copy of it
        # (copy-on-write), at ~1 s of start-up; one process switches in the background.
        serving = threading.Event()
        backend = switch_backend(app, background=workers == 1, serving=serving, tls=tls is not None)
        log.info("%s", startup_line(app, args, workers, tls is not None, backend))
        grace = DEFAULT_GRACE_S if args.shutdown_timeout is None else float(args.shutdown_timeout)
        if workers == 1:
            if os.environ.get("TOKENBRIDGE_HTTP") == "uvicorn":
                serving.set()
                run_uvicorn(app, args.host, args.port, sock, tls, grace)
            else:
                run_bare(app, args.host, args.port, sock, tls, grace, on_serving=serving.set)
            return 0
        run_server = run_uvicorn if os.environ.get("TOKENBRIDGE_HTTP") == "uvicorn" else run_bare
        from tokenbridge.server.workers import serve_workers

        return serve_workers(
            lambda s, fleet: run_server(app, args.host, args.port, s, tls, grace, fleet), args.host, args.port, workers,
            sock=sock, on_exit=metrics.worker_gone,
        )
    finally:
        if shared is not None:
            metrics.remove_shared(shared)


def switch_backend(app: App, background: bool, serving: threading.Event | None = None, tls: bool = False) -> str:
    """Switch the tokenizer to the fastest exact backend (``model/fast_backend.py``); returns
    the backend serving (for the start-up line).

    In the background, start-up stays under a second: ``tokenizers`` serves until fastokens
    has loaded and passed its checks (~1 s later), and stays if they fail; a log line says
    which backend then serves. The load waits for ``serving`` (the server answering, at most
    a second): on a one-core worker it would otherwise share the core with the start-up.
    Once fastokens serves, the pages of code it left unused are dropped (OpenSSL's are kept
    when ``tls`` serves).
    """
    tok = app.model.tokenizer
    if getattr(tok, "use_backend", None) is None:
        return type(tok).__name__
    from tokenbridge.model import fast_backend

    chosen: list[str] = []

    def load() -> None:
        if background and serving is not None:
            serving.wait(1.0)
        # The checks run on a thread of their own: fastokens keeps ~16 MB of caches per thread
        # that encodes, freed only when that thread ends.
        checks = threading.Thread(target=lambda: chosen.append(fast_backend.load(tok)))
        checks.start()
        checks.join()
        fast_backend.release_freed_memory()
        if chosen and chosen[0].startswith("fastokens"):
            unused = fast_backend.TOKENIZERS_ONLY_LIBRARIES + (() if tls else fast_backend.TLS_LIBRARIES)
            fast_backend.release_code_pages("tokenizers", unused)
        memory.serving_thresholds()
        if background:
            log.info("tokenizer backend: %s", chosen[0] if chosen else "tokenizers")

    if background:
        threading.Thread(target=load, name="tokenbridge-fast-backend", daemon=True).start()
        return "tokenizers (fastokens once its start-up checks pass)"
    load()
    return chosen[0] if chosen else "tokenizers"


def run_bare(app: App, host: str, port: int, sock: socket.socket | None = None, tls=None,
             grace_s: float = DEFAULT_GRACE_S, fleet=None, on_serving=None) -> None:
    """The bare httptools server: no ASGI layer between the socket and ``App.answer``."""
    from tokenbridge.server import http

    http.run(app, host, port, sock, tls, grace_s, fleet, on_serving)


def run_uvicorn(app: App, host: str, port: int, sock: socket.socket | None = None, tls=None,
                grace_s: float = DEFAULT_GRACE_S, fleet=None) -> None:
    """uvicorn on uvloop + httptools; on ``sock`` (a worker's inherited socket) when given.
    TLS (``tls``) and passing connections between workers (``fleet``) are the bare server's only."""
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=os.environ.get("TOKENBRIDGE_LOG_LEVEL", "warning"),
        access_log=False,
        lifespan="off",
        loop="auto",
        http="auto",
        timeout_keep_alive=5,
        timeout_graceful_shutdown=grace_s,
    )
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)
