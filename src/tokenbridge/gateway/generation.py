"""One engine request from send to end: the wire body, the headers passed on, and the abort.

The engine names the request ``generate-tokens-<X-Request-Id or request_id>``; we always send
an ``X-Request-Id`` (the client's, else the rendered request_id), so the name to abort by is
known before the first byte. Stop strings are ours to apply: the engine gets none.
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from typing import AsyncIterator

import msgspec

from tokenbridge.gateway.engine import EngineClient, EngineStream
from tokenbridge.protocol.engine import GenerateChunk, GenerateRequest
from tokenbridge.protocol.errors import bad_request

PASSED_HEADERS = (b"traceparent", b"tracestate")
SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
DONE = b"data: [DONE]\n\n"


def engine_body(gen: GenerateRequest) -> bytes:
    """The rendered GenerateRequest as the engine is sent it: streamed, with no stop strings."""
    params = dict(gen.sampling_params)
    params.pop("stop", None)
    params.pop("output_text_buffer_length", None)
    return msgspec.json.encode(msgspec.structs.replace(gen, sampling_params=params, stream=True, stream_options=None))


class Generation:
    """``async with Generation(...) as g: async for batch in g.batches()``; leaving early aborts."""

    def __init__(self, engine: EngineClient, gen: GenerateRequest, client_headers: dict[bytes, bytes]) -> None:
        if gen.sampling_params.get("prompt_logprobs") is not None:
            # vLLM's token stream (serve_tokens_stream_generator) never sends them: a 400
            # rather than an answer that lacks them.
            raise bad_request(
                "prompt_logprobs (also asked for by echo with logprobs) cannot be served with --engine-url: "
                "the engine's token stream does not carry prompt logprobs", "prompt_logprobs")
        self.engine = engine
        self.gen = gen
        xrid = client_headers.get(b"x-request-id")
        rid = xrid.decode("latin-1") if xrid else gen.request_id
        self.headers = {"x-request-id": rid}
        for name in PASSED_HEADERS:
            v = client_headers.get(name)
            if v:
                self.headers[name.decode()] = v.decode("latin-1")
        self.engine_request_id = f"generate-tokens-{rid}"
        self.stream: EngineStream | None = None
        self.ended = False  # read to its end, or aborted

    async def __aenter__(self) -> "Generation":
        # The HTTP server runs a handler without a task until it first suspends; aiohttp's
        # timeouts need one, so suspend once first.
        await asyncio.sleep(0)
        try:
            self.stream = await self.engine.generate(engine_body(self.gen), self.headers)
        except asyncio.CancelledError:  # the client left while the engine was being asked
            await self.engine.abort([self.engine_request_id])
            raise
        return self

    def batches(self) -> AsyncIterator[list[GenerateChunk]]:
        return self.stream.batches()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        if self.stream is None or self.ended:
            return
        self.ended = True
        if self.stream.done:
            self.stream.close()
            return
        self.stream.drop()
        await self.engine.abort([self.engine_request_id])

    async def abort(self) -> None:
        """End the engine request now (a stop string matched): the rest is never read."""
        await self.__aexit__(None, None, None)


async def merged_batches(opened: list[Generation], ended: set[int]) -> AsyncIterator[tuple[int, list[GenerateChunk]]]:
    """``(i, batch)`` from the engine streams ``opened`` as each delivers, as vLLM merges the
    generators of a multi-prompt completion. One read per stream is in flight, and a stream
    is read again only once its batch was handled and ``i`` is not in ``ended``, so a slow
    client still slows every engine read. Use under ``contextlib.aclosing``."""
    if len(opened) == 1:
        async with aclosing(opened[0].batches()) as stream:
            async for batch in stream:
                yield 0, batch
                if 0 in ended:
                    return
        return
    streams = [g.batches() for g in opened]
    reads = {asyncio.ensure_future(anext(it)): i for i, it in enumerate(streams)}
    try:
        while reads:
            done, _ = await asyncio.wait(reads, return_when=asyncio.FIRST_COMPLETED)
            for read in sorted(done, key=reads.__getitem__):
                i = reads.pop(read)
                try:
                    batch = read.result()
                except StopAsyncIteration:
                    continue
                yield i, batch
                if i not in ended:
                    reads[asyncio.ensure_future(anext(streams[i]))] = i
    finally:
        for read in reads:
            read.cancel()
        await asyncio.gather(*reads, return_exceptions=True)
        for it in streams:
            await it.aclose()
