"""The stream-state codec: the current version is written, the previous one still read, others refused."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from tokenbridge.derender import state as codec
from tokenbridge.protocol.errors import ApiError

MODEL = types.SimpleNamespace(folder=Path("qwen3"), tokenizer=object(), vocab_size=151936, max_model_len=8192)
CFG = types.SimpleNamespace(tool_call_parser="hermes", reasoning_parser="qwen3", enable_auto_tool_choice=True,
                            tool_call_streaming="incremental")
STATE = codec.StreamState(kind=codec.CHAT, parsed=True, detokenizer=[[1, 2], 0, 2], parser=[None, ["x", True]])


def encoded_as(version: int) -> str:
    saved = codec.VERSION
    codec.VERSION = version
    try:
        return codec.encode(MODEL, CFG, STATE)
    finally:
        codec.VERSION = saved


def test_current_version_round_trips():
    assert codec.VERSION == 3
    assert codec.decode(MODEL, CFG, codec.encode(MODEL, CFG, STATE), codec.CHAT, "s") == STATE


def test_version_2_is_still_read():
    assert codec.decode(MODEL, CFG, encoded_as(2), codec.CHAT, "s") == STATE


@pytest.mark.parametrize("version", [0, 1, 4, 255])
def test_other_versions_are_refused(version):
    with pytest.raises(ApiError) as e:
        codec.decode(MODEL, CFG, encoded_as(version), codec.CHAT, "s")
    assert (e.value.status, f"version {version} is not supported" in e.value.message) == (400, True)
