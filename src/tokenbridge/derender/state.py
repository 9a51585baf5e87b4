"""The ``stream_state`` codec: what a streaming client carries from one derender call to the next.

The server keeps no session. Our state is a string: URL-safe base64 of a version byte, a
MessagePack ``StreamState`` and a truncated HMAC-SHA256. The key is derived from a deployment
secret and the model/parser fingerprint, so every worker of one deployment accepts the others'
states while a state from another model or deployment, or one that was edited, is refused.
The secret is ``--stream-state-key-file``'s content, else ``TOKENBRIDGE_STATE_KEY``, else
random bytes made once per server start (before the workers fork, so they share it): without
a configured secret nobody can mint a state, but a stream cannot move to another replica or
outlive a restart. It holds the detokenizer window, the parser's hold-back and a few counters, never
the output so far, so its size and the cost of a call do not grow with the stream.

A vLLM-shaped state (a JSON object with ``output_token_ids`` …) is accepted too, validated as
vLLM validates it, so a stream started against vLLM can continue here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
from functools import lru_cache
from typing import Annotated, Any

import msgspec

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol.errors import ApiError, validation_error

#: Version 3: every parser snapshot is a typed ``ParserState`` array. Version 2 states are still
#: read (for one release): the states version 2 saved as a bare value (``ParserState.bare_in_v2``)
#: are read as that value's one-field array, every other one has the same layout.
VERSION = 3
READABLE_VERSIONS = frozenset({2, 3})
CHAT, COMPLETION = 0, 1
# A state far above any legitimate hold-back (a parser holds at most one undecided call).
MAX_STATE_CHARS = 1 << 20
_MAC_BYTES = 16
_secret: bytes | None = None
_source = "random"
_VLLM_PREV_TOKENS_LIMIT = 1024

NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class StreamState(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """One choice's position in a stream (field order is the wire format of ``VERSION``)."""

    kind: int
    parsed: bool
    detokenizer: list[Any]
    parser: Any = None
    logprob_context: Annotated[list[NonNegative], msgspec.Meta(max_length=4)] = []
    text_offset: NonNegative = 0
    role_sent: bool = False
    finished: bool = False
    output_tokens: NonNegative = 0
    choice_index: int = -1
    tool_call_ids: list[str] = []


class VllmStreamState(msgspec.Struct, kw_only=True):
    """vLLM 0.33's ``DerenderStreamState``, with its field validators."""

    prev_tokens: list[str] = []
    prefix_offset: NonNegative = 0
    read_offset: NonNegative = 0
    role_sent: bool = False
    logprob_context_token_ids: Annotated[list[NonNegative], msgspec.Meta(max_length=4)] = []
    logprob_text_offset: NonNegative = 0
    output_token_ids: list[NonNegative] = []
    output_chunk_lens: list[Annotated[int, msgspec.Meta(gt=0)]] = []
    tools_streamed: bool = False
    last_tool_call_ids: list[str] = []


def _invalid(loc: str, msg: str) -> ApiError:
    return validation_error(loc, "value_error", f"Value error, {msg}")


def configure_secret(key_file: str | None = None) -> str:
    """Choose this server's secret (call before forking workers); says where it came from.

    An unreadable or empty key file is a ``ValueError``: a start must not fall back to a
    random key when a shared one was asked for."""
    global _secret, _source
    if key_file is not None:
        try:
            secret = open(key_file, "rb").read().strip()
        except OSError as e:
            raise ValueError(f"cannot read --stream-state-key-file {key_file}: {e.strerror}") from None
        if not secret:
            raise ValueError(f"--stream-state-key-file {key_file} is empty")
        source = "file"
    elif os.environ.get("TOKENBRIDGE_STATE_KEY"):
        secret, source = os.environ["TOKENBRIDGE_STATE_KEY"].encode(), "env"
    else:
        secret, source = secrets.token_bytes(32), "random"
    _secret, _source = secret, source
    _key.cache_clear()
    return source


def secret_source() -> str:
    """Where this server's secret came from: ``file``, ``env`` or ``random``."""
    return _source


@lru_cache(maxsize=16)
def _key(fingerprint: bytes) -> bytes:
    """Derived once per process from the server's secret (made on first use if not configured)."""
    if _secret is None:
        configure_secret()
    return hmac.new(_secret, b"tokenbridge stream state\0" + fingerprint, hashlib.sha256).digest()


def fingerprint(model: ModelContext, cfg: ServeConfig) -> bytes:
    """What a state depends on: the model's vocabulary and length, and the parsers."""
    tok = model.tokenizer
    parts = (
        model.folder.name,
        type(tok).__name__,
        str(model.vocab_size),
        str(model.max_model_len),
        str(cfg.tool_call_parser),
        str(cfg.reasoning_parser),
        str(cfg.enable_auto_tool_choice),
        cfg.tool_call_streaming,
    )
    return "\x1f".join(parts).encode()


def _mac_key(model: ModelContext, cfg: ServeConfig) -> bytes:
    return _key(fingerprint(model, cfg))


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(StreamState)


def encode(model: ModelContext, cfg: ServeConfig, state: StreamState) -> str:
    payload = bytes([VERSION]) + _encoder.encode(state)
    mac = hmac.new(_mac_key(model, cfg), payload, hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.urlsafe_b64encode(payload + mac).rstrip(b"=").decode("ascii")


def decode(model: ModelContext, cfg: ServeConfig, blob: str, kind: int, loc: str) -> StreamState:
    """Our own state, verified; any defect is a 400 (a tampered state never reaches a parser)."""
    if len(blob) > MAX_STATE_CHARS:
        raise _invalid(loc, f"stream_state is larger than {MAX_STATE_CHARS} characters")
    try:
        raw = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
    except (binascii.Error, ValueError):
        raise _invalid(loc, "stream_state is not a tokenbridge state") from None
    # Only the canonical spelling is accepted, so an edited padding bit is an edit too.
    if len(raw) <= 1 + _MAC_BYTES or base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != blob:
        raise _invalid(loc, "stream_state is not a tokenbridge state")
    payload, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
    expected = hmac.new(_mac_key(model, cfg), payload, hashlib.sha256).digest()[:_MAC_BYTES]
    if not hmac.compare_digest(mac, expected):
        raise _invalid(loc, "stream_state failed its integrity check (edited, or from another model or deployment)")
    if payload[0] not in READABLE_VERSIONS:
        raise _invalid(loc, f"stream_state version {payload[0]} is not supported")
    try:
        state = _decoder.decode(payload[1:])
    except msgspec.DecodeError:
        raise _invalid(loc, "stream_state is malformed") from None
    if state.kind != kind:
        raise _invalid(loc, "stream_state belongs to the other derender endpoint")
    return state


def decode_vllm(value: Any, loc: str) -> VllmStreamState:
    """A vLLM-shaped state, with the errors vLLM's request validation gives."""
    try:
        state = msgspec.convert(value, VllmStreamState)
    except msgspec.ValidationError as e:
        raise _invalid(loc, str(e).replace("'", '"')) from None
    if len(state.prev_tokens) > _VLLM_PREV_TOKENS_LIMIT:
        raise _invalid(
            f"{loc}.prev_tokens",
            f"prev_tokens length ({len(state.prev_tokens)}) exceeds maximum ({_VLLM_PREV_TOKENS_LIMIT})",
        )
    total = sum(state.output_chunk_lens)
    if total != len(state.output_token_ids):
        raise _invalid(
            loc,
            "output_chunk_lens must sum to len(output_token_ids) "
            f"(got sum={total}, len(output_token_ids)={len(state.output_token_ids)})",
        )
    return state


def load(
    model: ModelContext, cfg: ServeConfig, value: Any, kind: int, loc: str
) -> StreamState | VllmStreamState | None:
    """The request's ``stream_state``: ours (a string), vLLM's (an object) or none (null)."""
    if value is None:
        return None
    if isinstance(value, str):
        return decode(model, cfg, value, kind, loc)
    if isinstance(value, dict):
        return decode_vllm(value, loc)
    raise validation_error(loc, "model_attributes_type", "Input should be a valid dictionary or object to extract fields from")
