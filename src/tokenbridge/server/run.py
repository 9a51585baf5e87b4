"""Process start-up: load the model once, then serve in one or more workers.

The bare httptools server (``server/http.py``) serves by default; ``TOKENBRIDGE_HTTP=uvicorn``
selects uvicorn instead (same app, same answers).
"""

from __future__ import annotations

import os
import socket
import sys

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelLoader
from tokenbridge.server.app import App


def build(args, loader: ModelLoader | None = None) -> App:
    model = (loader or ModelLoader(args)).result()
    cfg = ServeConfig(
        tool_call_parser=args.tool_call_parser,
        reasoning_parser=args.reasoning_parser,
        enable_auto_tool_choice=args.enable_auto_tool_choice,
        chat_template_content_format=args.chat_template_content_format,
        default_chat_template_kwargs=args.default_chat_template_kwargs or {},
        trust_request_chat_template=args.trust_request_chat_template,
        max_logprobs=args.max_logprobs,
        api_key=args.api_key,
        max_body_bytes=args.max_body_bytes,
        engine_url=args.engine_url,
        engine_api_key=args.engine_api_key,
        engine_connect_timeout=args.engine_connect_timeout,
        engine_first_token_timeout=args.engine_first_token_timeout,
        engine_idle_timeout=args.engine_idle_timeout,
        tool_call_streaming=args.tool_call_streaming,
    )
    return App(model, cfg)


def serve(args, loader: ModelLoader | None = None) -> int:
    try:
        app = build(args, loader)
    except (OSError, ValueError) as e:
        print(f"tokenbridge: cannot load {args.model}: {e}", file=sys.stderr)
        return 2
    from tokenbridge.model.fast_backend import release_freed_memory

    release_freed_memory()
    if args.workers is None:
        from tokenbridge.server.workers import default_workers

        workers = default_workers()
    else:
        workers = max(1, args.workers)
    run_server = run_uvicorn if os.environ.get("TOKENBRIDGE_HTTP") == "uvicorn" else run_bare
    if workers == 1:
        switch_backend(app, background=True)
        run_server(app, args.host, args.port)
        return 0
    from tokenbridge.server.workers import serve_workers

    # Before forking, so the workers share one copy of it (copy-on-write), at ~1 s of start-up.
    switch_backend(app, background=False)

    return serve_workers(lambda sock: run_server(app, args.host, args.port, sock), args.host, args.port, workers)


def switch_backend(app: App, background: bool) -> None:
    """Switch the tokenizer to the fastest exact backend (``model/fast_backend.py``).

    In the background, start-up stays under a second: ``tokenizers`` serves until fastokens
    has loaded and passed its checks (~1 s later), and stays if they fail. The log says which
    backend serves.
    """
    if getattr(app.model.tokenizer, "use_backend", None) is None:
        return
    import threading

    from tokenbridge.model import fast_backend

    def load() -> None:
        # The checks run on a thread of their own: fastokens keeps ~16 MB of caches per thread
        # that encodes, freed only when that thread ends.
        chosen: list[str] = []
        checks = threading.Thread(target=lambda: chosen.append(fast_backend.load(app.model.tokenizer)))
        checks.start()
        checks.join()
        fast_backend.release_freed_memory()
        print(f"tokenbridge[{os.getpid()}]: tokenizer backend: {chosen[0] if chosen else 'tokenizers'}",
              file=sys.stderr, flush=True)

    if background:
        threading.Thread(target=load, name="tokenbridge-fast-backend", daemon=True).start()
    else:
        load()


def run_bare(app: App, host: str, port: int, sock: socket.socket | None = None) -> None:
    """The bare httptools server: no ASGI layer between the socket and ``App._handle``."""
    from tokenbridge.server import http

    http.run(app, host, port, sock)


def run_uvicorn(app: App, host: str, port: int, sock: socket.socket | None = None) -> None:
    """uvicorn on uvloop + httptools; on ``sock`` (a worker's inherited socket) when given."""
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
    )
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)
