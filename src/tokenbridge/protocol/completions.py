"""OpenAI response types as vLLM 0.33's derender (and the frontend) returns them.

Every field is written, in vLLM's key order, nulls included; the one exception is a message's
``tool_calls``, which vLLM leaves out when no call was made (``UNSET``).
"""

from __future__ import annotations

from typing import Any

import msgspec


class Usage(msgspec.Struct, kw_only=True):
    prompt_tokens: int
    total_tokens: int
    completion_tokens: int
    prompt_tokens_details: None = None
    completion_tokens_details: None = None


def usage(prompt_tokens: int, completion_tokens: int) -> Usage:
    return Usage(
        prompt_tokens=prompt_tokens, total_tokens=prompt_tokens + completion_tokens, completion_tokens=completion_tokens
    )


class FunctionCall(msgspec.Struct):
    name: str
    arguments: str


class ToolCall(msgspec.Struct, kw_only=True):
    id: str
    type: str = "function"
    function: FunctionCall


class ChatMessage(msgspec.Struct, kw_only=True):
    role: str = "assistant"
    content: str | None
    refusal: None = None
    annotations: None = None
    audio: None = None
    function_call: None = None
    tool_calls: list[ToolCall] | msgspec.UnsetType = msgspec.UNSET
    reasoning: str | None = None


class ChatChoice(msgspec.Struct, kw_only=True):
    index: int
    message: ChatMessage
    logprobs: Any
    finish_reason: str
    stop_reason: int | str | None
    token_ids: list[int] | None
    routed_experts: None = None
    weight_versions: None = None


class ChatCompletionResponse(msgspec.Struct, kw_only=True):
    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    service_tier: None = None
    system_fingerprint: None = None
    usage: Usage
    prompt_logprobs: Any
    prompt_token_ids: list[int] | None
    prompt_text: None = None
    kv_transfer_params: Any
    ec_transfer_params: None = None
    metrics: Any


class CompletionChoice(msgspec.Struct, kw_only=True):
    index: int
    text: str
    logprobs: Any
    finish_reason: str
    stop_reason: int | str | None
    token_ids: list[int] | None
    prompt_logprobs: Any
    prompt_token_ids: list[int] | None
    routed_experts: None = None
    weight_versions: None = None


class CompletionResponse(msgspec.Struct, kw_only=True):
    id: str
    object: str = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    service_tier: None = None
    system_fingerprint: None = None
    usage: Usage
    kv_transfer_params: Any
    ec_transfer_params: None = None
    metrics: Any


class FunctionDelta(msgspec.Struct):
    name: str | None
    arguments: str | None


class ToolCallChunk(msgspec.Struct, kw_only=True):
    """One entry of a streamed delta's ``tool_calls``: an opening one carries the id, type and
    name, the ones after it only arguments."""

    id: str | None
    type: str | None
    index: int
    function: FunctionDelta


class ChatDelta(msgspec.Struct, kw_only=True):
    role: str | None = None
    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallChunk] | msgspec.UnsetType = msgspec.UNSET


class ChatChunkChoice(msgspec.Struct, kw_only=True):
    index: int
    delta: ChatDelta
    logprobs: Any
    finish_reason: str | None
    stop_reason: int | str | None
    token_ids: list[int] | None
    weight_versions: None = None


class CompletionChunkChoice(msgspec.Struct, kw_only=True):
    index: int
    text: str
    logprobs: Any
    finish_reason: str | None
    stop_reason: int | str | None
    prompt_token_ids: list[int] | None
    token_ids: list[int] | None
    weight_versions: None = None


class ChatCompletionChunk(msgspec.Struct, kw_only=True):
    id: str
    object: str = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChatChunkChoice]
    usage: Usage | None
    system_fingerprint: None = None
    prompt_token_ids: list[int] | None
    prompt_text: None = None
    metrics: Any
    kv_transfer_params: None = None


class CompletionChunk(msgspec.Struct, kw_only=True):
    id: str
    object: str = "text_completion"
    created: int
    model: str
    choices: list[CompletionChunkChoice]
    usage: Usage | None
    system_fingerprint: None = None
    metrics: Any
    kv_transfer_params: None = None
