"""Server-sent events to the client: the streamed body and vLLM's error event."""

from __future__ import annotations

from typing import AsyncIterator

import msgspec

from tokenbridge.protocol.errors import ApiError


class Streamed:
    """A response body sent as it is produced (``text/event-stream``, chunked)."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self.chunks = chunks


def error_event(err: ApiError) -> bytes:
    """vLLM's mid-stream failure: the error envelope as one event (``data: [DONE]`` follows)."""
    return b"data: " + msgspec.json.encode(err.envelope()) + b"\n\n"
