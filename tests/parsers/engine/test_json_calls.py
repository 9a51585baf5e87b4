"""The JSON call streams' typed states (``engine/json_calls.py``): a state taken mid-call
restores to the same stream, and a forged one is a ValueError before any parsing."""

from __future__ import annotations

import msgspec
import pytest

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
TEXT = '<tool_call>{"name": "f", "arguments": {"a": [1, "x"]}}</tool_call>'


def hermes():
    return registry.get_tool_parser("hermes").incremental(CTX)


def test_a_state_taken_mid_call_restores_to_the_same_stream():
    for cut in range(len(TEXT) + 1):
        p = hermes()
        p.feed(TEXT[:cut], [])
        snap = msgspec.msgpack.decode(msgspec.msgpack.encode(p.snapshot()))
        q = hermes()
        q.restore(snap)
        assert msgspec.to_builtins(q.snapshot()) == snap
        assert (q.feed(TEXT[cut:], []), q.finish()) == (p.feed(TEXT[cut:], []), p.finish())


def test_forged_states_are_refused():
    p = hermes()
    p.feed(TEXT[:30], [])
    good = msgspec.to_builtins(p.snapshot())
    mode, buf, index, raw, call = good
    assert call is not None
    pos, member, sub, *rest = call
    forged = [
        [mode, buf, index, raw, None],  # in a call, no call object
        [0, buf, index, raw, call],  # a call object outside a call
        [mode, buf, -1, raw, call],  # a negative index
        [mode, buf, index, raw, [pos, member, None, *rest]],  # in a member, no member stream
        [mode, buf, index, raw, [pos, member, [sub[0], "{x", sub[2]], *rest]],  # not a container
        [mode, buf, index, raw, [99, member, sub, *rest]],  # no such position
        [*good, 0],  # a field too many
    ]
    for snap in forged:
        with pytest.raises(ValueError):
            hermes().restore(snap)
