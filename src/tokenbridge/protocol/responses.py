"""OpenAI Responses request type, as vLLM 0.33's ``/v1/responses/render`` accepts it.

Input items, tools and tool_choice stay loosely typed; the render stage interprets them, after
``check_shapes`` has refused what the OpenAI item and tool unions refuse.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

from tokenbridge.protocol.errors import ApiError, validation_error

Obj = dict[str, Any]
_ROLES = ("user", "assistant", "system", "developer")
# The ``type`` of every member of the OpenAI SDK's ``Tool`` union, as vLLM 0.33 pins it.
_TOOL_TYPES = frozenset((
    "apply_patch", "code_interpreter", "computer", "computer_use_preview", "custom", "file_search", "function",
    "image_generation", "local_shell", "mcp", "namespace", "programmatic_tool_calling", "shell", "tool_search",
    "web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11",
))
_INT64 = msgspec.Meta(ge=-(2**63), le=2**63 - 1)
_Penalty = Annotated[float, msgspec.Meta(ge=-2.0, le=2.0)]


class ResponsesRequest(msgspec.Struct, kw_only=True):
    input: Union[str, list[Obj]]
    instructions: str | None = None
    max_output_tokens: int | None = None
    model: str | None = None
    logit_bias: dict[str, float] | None = None
    parallel_tool_calls: bool | None = True
    previous_response_id: str | None = None
    prompt: Obj | None = None
    reasoning: Obj | None = None
    include: list[str] | None = None
    include_reasoning: bool = True
    stream: bool | None = False
    background: bool | None = False
    store: bool | None = True
    temperature: float | None = None
    text: Obj | None = None
    tool_choice: Union[str, Obj] = "auto"
    tools: list[Obj] = msgspec.field(default_factory=list)
    top_logprobs: int | None = 0
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    truncation: Literal["auto", "disabled"] | None = "disabled"
    skip_special_tokens: bool | None = None
    spaces_between_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    presence_penalty: _Penalty | None = None
    frequency_penalty: _Penalty | None = None
    repetition_penalty: float | None = None
    seed: Annotated[int, _INT64] | None = None
    stop: Union[str, list[str], None] = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    request_id: str | None = None
    priority: Annotated[int, _INT64] = 0
    cache_salt: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)] | None = None
    structured_outputs: Obj | None = None
    vllm_xargs: Obj | None = None
    kv_transfer_params: Obj | None = None
    ec_transfer_params: Obj | None = None
    chat_template_kwargs: Obj | None = None
    media_io_kwargs: Obj | None = None
    mm_processor_kwargs: Obj | None = None
    mm_payload: Literal["tensors", "none"] = "tensors"


def check_shapes(obj: Any) -> None:
    """The raw body against the shapes pydantic checks (400 ``Bad Request``): message items
    with a known role and a string or list ``content``, tools of a known type (function tools
    with a string ``name`` and object ``parameters``), and a known ``text.format``. ``tools``
    without a length fails earlier, as vLLM's ``len(tools)`` does; a dict ``input`` is
    iterated like pydantic does (its keys)."""
    if not isinstance(obj, dict):
        return
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, (list, str, dict)):
        raise ApiError(f"object of type '{type(tools).__name__}' has no len()")
    for i, tool in enumerate(tools if isinstance(tools, list) else ()):
        loc = f"body.tools.{i}"
        if not isinstance(tool, dict):
            raise validation_error(loc, "dict_type", "Input should be a valid dictionary")
        if not isinstance(tool.get("type"), str) or tool["type"] not in _TOOL_TYPES:
            raise validation_error(f"{loc}.FunctionTool.type", "literal_error", "Input should be 'function'")
        if tool["type"] == "function":
            if not isinstance(tool.get("name"), str):
                raise validation_error(f"{loc}.FunctionTool.name", "string_type", "Input should be a valid string")
            if tool.get("parameters") is not None and not isinstance(tool["parameters"], dict):
                raise validation_error(f"{loc}.FunctionTool.parameters", "dict_type", "Input should be a valid dictionary")
    text = obj.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    if fmt is not None:
        loc = "body.text.format"
        if not isinstance(fmt, dict):
            raise validation_error(loc, "dict_type", "Input should be a valid dictionary")
        if fmt.get("type") not in ("text", "json_object", "json_schema"):
            raise validation_error(f"{loc}.type", "literal_error", "Input should be 'text', 'json_schema' or 'json_object'")
        if fmt["type"] == "json_schema" and not (isinstance(fmt.get("name"), str) and isinstance(fmt.get("schema"), dict)):
            raise validation_error(f"{loc}.ResponseFormatTextJSONSchemaConfigParam", "missing", "Field required")
    items = obj.get("input")
    if isinstance(items, dict):
        obj["input"] = items = list(items)
    for i, item in enumerate(items if isinstance(items, list) else ()):
        loc = f"body.input.{i}.EasyInputMessageParam"
        if not isinstance(item, dict):
            raise validation_error(loc, "dict_type", "Input should be a valid dictionary")
        if item.get("type", "message") != "message":
            continue
        if item.get("role") not in _ROLES:
            raise validation_error(f"{loc}.role", "literal_error", "Input should be 'user', 'assistant', 'system' or 'developer'")
        if not isinstance(item.get("content"), (str, list)):
            raise validation_error(f"{loc}.content", "string_type", "Input should be a valid string")
