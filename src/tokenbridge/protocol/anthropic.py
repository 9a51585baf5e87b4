"""Anthropic Messages request types, as vLLM 0.33's ``/v1/messages/render`` accepts them."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

from tokenbridge.protocol import early
from tokenbridge.protocol.errors import ApiError, validation_error

Obj = dict[str, Any]
BlockType = Literal[
    "text",
    "image",
    "tool_use",
    "tool_result",
    "tool_reference",
    "thinking",
    "redacted_thinking",
    "tool_addition",
    "tool_removal",
]


class Tool(msgspec.Struct, kw_only=True):
    name: str
    input_schema: Obj
    description: str | None = None
    strict: bool | None = None
    defer_loading: bool | None = None


class ToolChangeReference(msgspec.Struct, tag_field="type", tag="tool_reference", kw_only=True):
    name: str


class ToolChangeDefinition(msgspec.Struct, tag_field="type", tag="tool_definition", kw_only=True):
    definition: Tool


class ContentBlock(msgspec.Struct, kw_only=True):
    type: BlockType
    text: str | None = None
    source: Obj | None = None
    id: str | None = None
    tool_use_id: str | None = None
    name: str | None = None
    input: Obj | None = None
    content: Union[str, list[Obj], None] = None
    is_error: bool | None = None
    tool_name: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    tool: Union[ToolChangeReference, ToolChangeDefinition, None] = None  # tool_addition / tool_removal


class Message(msgspec.Struct, kw_only=True):
    role: Literal["user", "assistant", "system"]
    content: Union[str, list[ContentBlock]]


class ToolChoice(msgspec.Struct, kw_only=True):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class ThinkingEnabled(msgspec.Struct, tag_field="type", tag="enabled", kw_only=True):
    budget_tokens: Annotated[int, msgspec.Meta(ge=1024)]
    display: Literal["summarized", "omitted", "updates"] | None = None


class ThinkingDisabled(msgspec.Struct, tag_field="type", tag="disabled", kw_only=True):
    pass


class ThinkingAdaptive(msgspec.Struct, tag_field="type", tag="adaptive", kw_only=True):
    display: Literal["summarized", "omitted", "updates"] | None = None


class JsonOutputFormat(msgspec.Struct, kw_only=True):
    json_schema: Obj | None = msgspec.field(default=None, name="schema")
    type: Literal["json_schema"] = "json_schema"


class OutputConfig(msgspec.Struct, kw_only=True):
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: JsonOutputFormat | None = None


class MessagesRequest(msgspec.Struct, kw_only=True):
    model: str
    messages: list[Message]
    max_tokens: int
    metadata: Obj | None = None
    output_config: OutputConfig | None = None
    thinking: Union[ThinkingEnabled, ThinkingDisabled, ThinkingAdaptive, None] = None
    stop_sequences: list[str] | None = None
    stream: bool | None = False
    system: Union[str, list[ContentBlock], None] = None
    temperature: float | None = None
    tool_choice: ToolChoice | None = None
    tools: list[Tool] | None = None
    top_k: int | None = None
    top_p: float | None = None
    # vLLM extensions
    mm_payload: Literal["tensors", "none"] = "tensors"
    return_mm_kwargs: bool | None = None
    cache_salt: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)] | None = None
    watermarking: bool | None = None
    kv_transfer_params: Obj | None = None
    ec_transfer_params: Obj | None = None
    vllm_xargs: Obj | None = None
    chat_template_kwargs: Obj | None = None


def _value_error(loc: str, msg: str) -> ApiError:
    return validation_error(loc, "value_error", f"Value error, {msg}")


def validate(req: MessagesRequest) -> None:
    """The pydantic validators of vLLM's ``AnthropicMessagesRequest`` that msgspec cannot express."""
    if not req.model:
        raise _value_error("body.model", "Model is required")
    if req.max_tokens <= 0:
        raise _value_error("body.max_tokens", "max_tokens must be positive")
    early.check_stop_count(req.stop_sequences, "body.stop_sequences")
    for i, msg in enumerate(req.messages):
        _check_tool_changes(msg.content, f"body.messages.{i}.content")
        if msg.role != "system":
            _reject_tool_changes(msg.content, f"body.messages.{i}")
    _check_tool_changes(req.system, "body.system")
    _reject_tool_changes(req.system, "body.system")
    if req.tool_choice is not None and req.tool_choice.type == "tool" and not req.tool_choice.name:
        raise _value_error("body.tool_choice", "tool_choice.name is required when type is 'tool'")
    remote_decode = req.kv_transfer_params and req.kv_transfer_params.get("do_remote_decode")
    if isinstance(req.thinking, ThinkingEnabled) and not remote_decode and req.thinking.budget_tokens >= req.max_tokens:
        raise _value_error("body", "thinking.budget_tokens must be less than max_tokens")


def _check_tool_changes(content: Any, loc: str) -> None:
    """A tool_addition/tool_removal block names its tool; a removal only by reference."""
    for block in content if isinstance(content, list) else ():
        if block.type not in ("tool_addition", "tool_removal"):
            continue
        if block.tool is None:
            raise _value_error(loc, f"tool is required for {block.type} blocks")
        if block.type == "tool_removal" and not isinstance(block.tool, ToolChangeReference):
            raise _value_error(loc, "tool_removal only accepts a tool_reference")


def _reject_tool_changes(content: Any, loc: str) -> None:
    if isinstance(content, list):
        for block in content:
            if block.type in ("tool_addition", "tool_removal"):
                raise _value_error(loc, f'{block.type} blocks are only allowed in messages with role "system"')


def tag_thinking_loc(err: ApiError, body: bytes) -> ApiError:
    """pydantic names the discriminated ``thinking`` branch in error locations."""
    if not (err.param or "").startswith("body.thinking."):
        return err
    try:
        tag = msgspec.json.decode(body)["thinking"]["type"]
    except Exception:
        return err
    if not isinstance(tag, str):
        return err
    loc = err.param.replace("body.thinking.", f"body.thinking.{tag}.", 1)
    return ApiError(err.message.replace(err.param, loc), err.status, err.type, loc)
