"""The engine side of the wire: what a token-in/token-out generate server returns, and the
derender request bodies that carry it (vLLM's ``GenerateTokensResponse`` family)."""

from __future__ import annotations

from typing import Annotated, Any, Union

import msgspec

from tokenbridge.protocol.ids import random_hex
from tokenbridge.protocol.openai import ChatCompletionRequest, CompletionRequest

TokenId = Annotated[int, msgspec.Meta(ge=0)]


class _RequestId(msgspec.Struct, kw_only=True):
    """``request_id`` may be left out but not null, as in vLLM's schema; a missing one is
    made up like vLLM's ``random_uuid()`` (16 hex digits).

    Decoded as ``str | UNSET`` so an explicit null fails validation.
    """

    request_id: Union[str, msgspec.UnsetType] = msgspec.UNSET

    def __post_init__(self) -> None:
        if self.request_id is msgspec.UNSET:
            self.request_id = random_hex(8)


class GenerateRequest(msgspec.Struct, kw_only=True):
    """What render returns and the engine is sent: vLLM's ``GenerateRequest``, its fields in
    the order of vLLM's JSON, every one present (nulls included)."""

    request_id: str
    token_ids: list[int]
    token_offsets: None = None
    features: None = None
    content_parts: None = None
    sampling_params: dict[str, Any]
    model: str | None
    reasoning_ended: bool | None = None
    reasoning_parser_kwargs: dict[str, Any] | None = None
    return_token_ids: bool | None = None
    output_mode: str = "tokens"
    parse_context: dict[str, Any] | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    cache_salt: str | None = None
    priority: int = 0
    kv_transfer_params: Any = None
    ec_transfer_params: Any = None


class TopLogprob(msgspec.Struct, gc=False):
    token_id: int
    logprob: float
    rank: int | None = None


class TokenLogprob(msgspec.Struct, gc=False):
    token_id: int
    logprob: float
    rank: int | None = None
    top_logprobs: list[TopLogprob] = []


class GenerateLogprobs(msgspec.Struct):
    content: list[TokenLogprob] | None = None


class GenerateChoice(msgspec.Struct, kw_only=True):
    index: int
    token_ids: list[TokenId] | None = None
    finish_reason: str | None = "stop"
    stop_reason: Union[int, str, None] = None
    logprobs: GenerateLogprobs | None = None
    routed_experts: Any = None
    weight_versions: Any = None


class GenerateResponse(_RequestId, kw_only=True):
    choices: list[GenerateChoice]
    output_mode: str = "tokens"
    model: str | None = None
    created: int | None = None
    usage: dict | None = None
    prompt_logprobs: Any = None
    prompt_token_ids: list[int] | None = None
    metrics: Any = None
    kv_transfer_params: Any = None
    ec_transfer_params: Any = None


class GenerateUsage(msgspec.Struct, kw_only=True):
    prompt_tokens: int | None = None
    completion_tokens: int = 0
    total_tokens: int | None = None


class GenerateChunk(_RequestId, kw_only=True):
    """One streamed engine chunk: like ``GenerateResponse`` but ``finish_reason`` defaults to null."""

    choices: list["GenerateChunkChoice"]
    output_mode: str = "tokens"
    usage: GenerateUsage | None = None
    prompt_token_ids: list[int] | None = None
    metrics: Any = None
    kv_transfer_params: Any = None


class GenerateChunkChoice(GenerateChoice, kw_only=True):
    finish_reason: str | None = None


class DerenderChatRequest(msgspec.Struct, kw_only=True):
    """Both chat derender bodies: ``stream`` selects one-shot or one streamed chunk."""

    stream: bool | None = False
    model: str | None = None
    generate_response: GenerateResponse | None = None
    generate_chunk: GenerateChunk | None = None
    stream_state: Any = None
    prompt_tokens: int | None = None
    prompt_token_ids: list[TokenId] | None = None
    chat_request: ChatCompletionRequest | None = None


class DerenderCompletionRequest(msgspec.Struct, kw_only=True):
    stream: bool | None = False
    model: str | None = None
    generate_responses: list[GenerateResponse] | None = None
    generate_chunk: GenerateChunk | None = None
    stream_state: Any = None
    prompt_tokens: Union[list[int], int, None] = None
    # A list per response (completions) or one flat list (streaming); checked by derender.
    prompt_token_ids: list[Any] | None = None
    completion_request: CompletionRequest | None = None
