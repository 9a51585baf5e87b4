"""Feeding a parser as a stateless stream does, shared by the parser tests."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import msgspec

from tokenbridge.parsers.base import Delta


class Fed(NamedTuple):
    """What the deltas add up to; ``calls`` holds ``(id, name, arguments)`` per call index."""

    content: str
    reasoning: str
    calls: list[tuple[str | None, str, str]]

    def named_calls(self) -> list[tuple[str, str]]:
        return [(name, args) for _, name, args in self.calls]


def feed(make: Callable[[], Any], pieces: list[str], restore: bool = False) -> Fed:
    """Feed ``pieces`` then ``finish``. With ``restore``, every step after the first runs on a
    new parser restored from the previous one's msgpack-encoded snapshot."""
    parser = make()
    deltas: list[Delta] = []
    for piece in [*pieces, None]:
        if restore and deltas:
            snap = msgspec.msgpack.decode(msgspec.msgpack.encode(parser.snapshot()))
            parser = make()
            parser.restore(snap)
        deltas.append(parser.feed(piece, []) if piece is not None else parser.finish())
    return accumulate(deltas)


def accumulate(deltas: list[Delta]) -> Fed:
    content = reasoning = ""
    calls: dict[int, tuple[str | None, str | None, str]] = {}
    for d in deltas:
        content += d.content
        reasoning += d.reasoning
        for tc in d.tool_calls:
            call_id, name, args = calls.get(tc.index, (None, None, ""))
            assert name is None or tc.name is None, "a call's name arrives once"
            calls[tc.index] = (call_id or tc.id, tc.name if name is None else name, args + tc.arguments)
    return Fed(content, reasoning, [(i, n or "", a) for i, n, a in (calls[k] for k in sorted(calls))])
