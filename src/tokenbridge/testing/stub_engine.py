"""A stand-in for ``vllm serve MODEL --tokens-only``: vLLM 0.33's generate wire, no model.

``POST /inference/v1/generate`` answers with recorded token ids: SSE of token-id deltas
(chunked transfer, one choice per event, ``data: [DONE]`` last) when ``stream`` is true, else
one ``GenerateTokensResponse``. Like a ``--tokens-only`` engine it refuses ``stop`` strings
("Check stop strings on the coordinator") and names a request
``generate-tokens-<X-Request-Id or request_id>``; ``POST /inference/v1/abort_requests`` stops it.

Every prompt gets the same output: ``--output-ids``, or the recorded choices a test set with
``POST /stub/control {"outputs": [...]}`` (a corpus case's engine output, replayed);
``{"queue": [[...], ...]}`` gives the next requests one output each, in order.
``--chunking`` picks the tokens per event: ``one``, ``random`` (seeded) or ``all``. The control
body also makes the next streams misbehave (``status``, ``stall_after``, ``malformed_after``,
``drop_after``, ``delay``, ``chunking``); ``GET /stub/stats`` reports requests, aborts and when
each stream's first event was sent.

    python -m tokenbridge.testing.stub_engine --port 9000 --output-ids 9707,11,1879,0,151645
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from pathlib import Path

from aiohttp import web

STOP_REFUSAL = (
    "stop strings are not supported on a --tokens-only server because detokenization is "
    "disabled. Check stop strings on the coordinator, or use stop_token_ids."
)


def _error(message: str, status: int = 400, etype: str = "BadRequestError") -> web.Response:
    body = {"error": {"message": message, "type": etype, "param": None, "code": status}}
    return web.json_response(body, status=status)


class StubEngine:
    def __init__(self, output_ids: list[int] | None, chunking: str, seed: int, delay: float) -> None:
        self.output_ids = output_ids
        self.chunking = chunking
        self.rng = random.Random(seed)
        self.delay = delay
        self.control: dict = {}
        self.requests = 0
        self.last_body: dict | None = None
        self.headers: dict[str, str] = {}
        self.aborted: list[str] = []
        self.active: dict[str, asyncio.Event] = {}
        self.received: dict[str, float] = {}  # when each request arrived (monotonic)
        self.first_event: dict[str, float] = {}
        self.finished: list[str] = []

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/inference/v1/generate", self.generate)
        app.router.add_post("/inference/v1/abort_requests", self.abort)
        app.router.add_post("/abort_requests", self.abort)
        app.router.add_get("/health", lambda r: web.Response())
        app.router.add_post("/stub/control", self.set_control)
        app.router.add_get("/stub/stats", self.stats)
        return app

    def outputs(self, n: int) -> list[dict] | None:
        queue = self.control.get("queue")
        recorded = queue.pop(0) if queue else self.control.get("outputs")
        if recorded is None and self.output_ids is not None:
            recorded = [{"index": 0, "token_ids": self.output_ids, "finish_reason": "stop", "stop_reason": None}]
        if not recorded:
            return None
        return [dict(recorded[i % len(recorded)], index=i) for i in range(n)]

    def split(self, ids: list[int]) -> list[int]:
        chunking = self.control.get("chunking", self.chunking)
        if chunking == "one":
            return [1] * len(ids)
        if chunking == "all" or not ids:
            return [len(ids)] if ids else []
        sizes, left = [], len(ids)
        while left:
            k = min(left, self.rng.randint(1, 7))
            sizes.append(k)
            left -= k
        return sizes

    async def generate(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        received = time.monotonic()
        ctl = dict(self.control)
        if ctl.get("status"):
            return _error(ctl.get("message", "engine failure"), ctl["status"], ctl.get("type", "InternalServerError"))
        try:
            body = await request.json()
        except ValueError:
            return _error("JSON decode error")
        self.last_body = body
        self.headers = {k.lower(): v for k, v in request.headers.items() if k.lower() in ("x-request-id", "traceparent", "tracestate", "authorization")}
        prompt, params = body.get("token_ids"), body.get("sampling_params")
        if not isinstance(prompt, list) or not prompt or not isinstance(params, dict):
            return _error("token_ids (non-empty) and sampling_params are required")
        if params.get("stop"):
            return _error(STOP_REFUSAL)
        name = f"generate-tokens-{request.headers.get('X-Request-Id') or body.get('request_id')}"
        self.received[name] = received
        n = params.get("n") or 1
        outs = self.outputs(n)
        if outs is None:
            return _error("the stub engine has no output to send (--output-ids, or outputs in /stub/control)", 404, "NotFoundError")
        want_logprobs = params.get("logprobs") is not None
        if not want_logprobs:
            outs = [dict(o, logprobs=None) for o in outs]
        if not body.get("stream"):
            return self._whole(name, prompt, outs, body)
        return await self._stream(request, name, prompt, outs, body, ctl)

    def _whole(self, name: str, prompt: list[int], outs: list[dict], body: dict) -> web.Response:
        completion = sum(len(o.get("token_ids") or ()) for o in outs)
        choices = [_choice(o, o.get("finish_reason") or "stop", o.get("token_ids"), o.get("logprobs")) for o in outs]
        return web.json_response({
            "request_id": name, "model": body.get("model"), "created": int(time.time()),
            "usage": {"prompt_tokens": len(prompt), "total_tokens": len(prompt) + completion,
                      "completion_tokens": completion, "prompt_tokens_details": None},
            "prompt_logprobs": None, "prompt_token_id_logprobs": None,
            "prompt_token_ids": prompt if body.get("return_token_ids") else None,
            "mm_placeholders": None, "metrics": None, "kv_transfer_params": None, "ec_transfer_params": None,
            "output_mode": "tokens", "choices": choices,
        })

    def _events(self, name: str, prompt: list[int], outs: list[dict], body: dict) -> list[bytes]:
        """Every SSE event of the stream, choices interleaved in turns as an engine steps them."""
        per_choice = []
        for o in outs:
            ids = list(o.get("token_ids") or ())
            lps = (o.get("logprobs") or {}).get("content")
            events, start = [], 0
            sizes = self.split(ids) or [0]
            for j, k in enumerate(sizes):
                last = j == len(sizes) - 1
                lp = {"content": lps[start : start + k]} if lps is not None else None
                events.append(_choice(o, o.get("finish_reason") if last else None, ids[start : start + k], lp, last))
                start += k
            per_choice.append(events)
        out, first = [], body.get("return_token_ids")
        for step in range(max(len(e) for e in per_choice)):
            for events in per_choice:
                if step < len(events):
                    ev = {"request_id": name, "usage": None}
                    if first:
                        ev["prompt_token_ids"], first = prompt, False
                    ev.update(output_mode="tokens", choices=[events[step]])
                    out.append(b"data: " + json.dumps(ev, separators=(",", ":")).encode() + b"\n\n")
        opts = body.get("stream_options") or {}
        if opts.get("include_usage"):
            c = sum(len(o.get("token_ids") or ()) for o in outs)
            usage = {"prompt_tokens": len(prompt), "total_tokens": len(prompt) + c, "completion_tokens": c}
            out.append(b"data: " + json.dumps({"request_id": name, "usage": usage, "output_mode": "tokens", "choices": []}).encode() + b"\n\n")
        return out

    async def _stream(self, request, name, prompt, outs, body, ctl) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream; charset=utf-8"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        stop = self.active[name] = asyncio.Event()
        events = self._events(name, prompt, outs, body)
        delay = ctl.get("delay", self.delay)
        try:
            for k, ev in enumerate(events):
                if stop.is_set():
                    break
                if k == ctl.get("stall_after"):
                    await stop.wait()
                    break
                if k == ctl.get("malformed_after"):
                    await resp.write(b"data: {not json\n\n")
                    break
                if k == ctl.get("drop_after"):
                    request.transport.close()
                    return resp
                if k == 0:
                    self.first_event[name] = time.monotonic()
                await resp.write(ev)
                if delay:
                    await asyncio.sleep(delay)
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            self.finished.append(name)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.active.pop(name, None)
        return resp

    async def abort(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"detail": "JSON decode error"}, status=400)
        ids = body.get("request_ids") if isinstance(body, dict) else None
        if ids is None:
            return web.json_response({"detail": "Missing 'request_ids' in request body"}, status=400)
        for rid in ids:
            self.aborted.append(rid)
            ev = self.active.get(rid)
            if ev is not None:
                ev.set()
        return web.Response()

    async def set_control(self, request: web.Request) -> web.Response:
        self.control = await request.json()
        return web.Response()

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({
            "requests": self.requests, "aborted": self.aborted, "active": sorted(self.active),
            "finished": self.finished, "received": self.received, "first_event": self.first_event,
            "last_request": self.last_body, "last_headers": self.headers,
        })


def _choice(o: dict, finish, ids, logprobs, last: bool = True) -> dict:
    return {
        "index": o["index"], "finish_reason": finish, "stop_reason": o.get("stop_reason") if last else None,
        "token_ids": ids, "routed_experts": None, "sampling_mask": None, "weight_versions": None,
        "logprobs": logprobs,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tokenbridge.testing.stub_engine", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--output-ids", default=None, help="comma-separated ids sent for any prompt not replayed")
    ap.add_argument("--output-file", default=None, help="a JSON list of ids sent for any prompt not replayed")
    ap.add_argument("--chunking", choices=["one", "random", "all"], default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds between two events")
    args = ap.parse_args(argv)
    ids = None
    if args.output_ids:
        ids = [int(x) for x in args.output_ids.split(",") if x.strip()]
    elif args.output_file:
        ids = json.loads(Path(args.output_file).read_text())
    engine = StubEngine(ids, args.chunking, args.seed, args.delay)
    web.run_app(engine.app(), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
