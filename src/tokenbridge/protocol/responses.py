"""OpenAI Responses request type, as vLLM 0.33's ``/v1/responses/render`` accepts it.

Input items, tools and tool_choice stay loosely typed; the render stage interprets them, after
``check_shapes`` has refused what the OpenAI item, tool and tool_choice unions refuse and
``check_tool_usage`` has applied vLLM's tool_choice validator.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

from tokenbridge.protocol import early, response_items
from tokenbridge.protocol.errors import ApiError, bad_request, validation_error

Obj = dict[str, Any]
_ROLES = ("user", "assistant", "system", "developer")
# The ``type`` of every member of the OpenAI SDK's ``Tool`` union, as vLLM 0.33 pins it.
_TOOL_TYPES = frozenset((
    "apply_patch", "code_interpreter", "computer", "computer_use_preview", "custom", "file_search", "function",
    "image_generation", "local_shell", "mcp", "namespace", "programmatic_tool_calling", "shell", "tool_search",
    "web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11",
))
_INCLUDE = Literal[
    "code_interpreter_call.outputs", "computer_call_output.output.image_url", "file_search_call.results",
    "message.input_image.image_url", "message.output_text.logprobs", "reasoning.encrypted_content",
]
# The ``type`` of each dict member of the SDK's tool_choice union, with its required fields.
_TOOL_CHOICE_TYPES = {
    "allowed_tools": response_items.td({"mode": response_items.lit("auto", "required"), "tools": response_items.list_of("dict")}),
    "function": response_items.td({"name": "str"}),
    "mcp": response_items.td({"server_label": "str"}, {"name": response_items.opt("str")}),
    "custom": response_items.td({"name": "str"}),
    **dict.fromkeys(
        ("file_search", "web_search_preview", "computer", "computer_use_preview", "computer_use",
         "web_search_preview_2025_03_11", "image_generation", "code_interpreter", "programmatic_tool_calling",
         "apply_patch", "shell"),
        response_items.td({}),
    ),
}
NAMESPACE_SEPARATOR = "__"
_INT64 = msgspec.Meta(ge=-(2**63), le=2**63 - 1)
_Penalty = Annotated[float, msgspec.Meta(ge=-2.0, le=2.0)]


class Reasoning(msgspec.Struct, kw_only=True):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    generate_summary: Literal["auto", "concise", "detailed"] | None = None
    context: Literal["auto", "current_turn", "all_turns"] | None = None
    mode: str | None = None


class ResponsesRequest(msgspec.Struct, kw_only=True):
    input: Union[str, list[Obj]]
    instructions: str | None = None
    max_output_tokens: int | None = None
    model: str | None = None
    max_tool_calls: int | None = None
    metadata: dict[str, str] | None = None
    logit_bias: dict[str, float] | None = None
    parallel_tool_calls: bool | None = True
    previous_response_id: str | None = None
    prompt: Obj | None = None
    reasoning: Reasoning | None = None
    include: list[_INCLUDE] | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"] = "auto"
    user: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "in-memory", "24h"] | None = None
    safety_identifier: str | None = None
    session_id: str | None = None
    watermarking: bool | None = None
    enable_response_messages: bool = False
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
    watermarking: bool | None = None
    kv_transfer_params: Obj | None = None
    ec_transfer_params: Obj | None = None
    chat_template_kwargs: Obj | None = None
    media_io_kwargs: dict[str, Obj] | None = None
    mm_processor_kwargs: Obj | None = None
    mm_payload: Literal["tensors", "none"] = "tensors"


def check_shapes(obj: Any) -> None:
    """vLLM's before-validators, then the raw body against the shapes pydantic checks (400
    ``Bad Request``): tools of a known type (function tools with a string ``name`` and object
    ``parameters``), a known ``text.format`` and ``tool_choice``, and input items some member
    of the item union accepts (``response_items``). ``tools`` without a length fails earlier,
    as vLLM's ``len(tools)`` does; a dict ``input`` is iterated like pydantic does (its keys)."""
    if not isinstance(obj, dict):
        return
    check_validators(obj)
    early.check_stop_count(obj.get("stop"), "body.stop.list[str]")
    tools = obj.get("tools")
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
    _check_tool_choice(obj.get("tool_choice", "auto"))
    items = obj.get("input")
    if isinstance(items, dict):
        obj["input"] = items = list(items)
    if isinstance(items, list):
        obj["input"] = items = [response_items.prepare(item) for item in items]
        for i, item in enumerate(items):
            if not response_items.valid_item(item):
                raise _invalid_item(i, len(items))


def _check_tool_choice(choice: Any) -> None:
    if isinstance(choice, str) and choice in ("none", "auto", "required"):
        return
    spec = _TOOL_CHOICE_TYPES.get(choice.get("type")) if isinstance(choice, dict) else None
    if spec is None or not response_items.accepts(spec, choice):
        raise validation_error("body.tool_choice", "literal_error", "Input should be 'none', 'auto' or 'required'")


def _invalid_item(index: int, count: int) -> ApiError:
    """pydantic's report for an item no member of the union accepts; its first error is the
    ``str`` branch of ``input``, which names the ``param``."""
    message = (
        "2 validation errors:\n"
        f"  {{'type': 'string_type', 'loc': 'body.input', 'msg': 'Input should be a valid string', 'input': '<list of {count} items>'}}\n"
        f"  {{'type': 'union_tag_invalid', 'loc': 'body.input.{index}', 'msg': 'Input should be a valid input or output item'}}"
    )
    return ApiError(message, 400, "Bad Request", "body.input")


def check_validators(obj: Any) -> None:
    """vLLM's ``ResponsesRequest`` before-validators, in the order pydantic runs them (the last
    defined first); they see the raw body and fail with a ``BadRequestError``."""
    if not isinstance(obj, dict):
        return
    _check_tool_usage(obj)
    tools = obj.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        fmt = tool.get("format") if isinstance(tool, dict) else None
        if isinstance(tool, dict) and tool.get("type") == "custom" and isinstance(fmt, dict) and fmt.get("type") == "grammar":
            raise bad_request(
                "Custom tools with a grammar format are not supported; only free-form text custom tools are accepted.",
                "tools",
            )
    if obj.get("prompt") is not None:
        raise bad_request("prompt template is not supported", "prompt")
    if obj.get("background") and not obj.get("store", True):
        raise bad_request("background can only be used when `store` is true", "background")
    early.check_cache_salt(obj)


def _check_tool_usage(obj: dict) -> None:
    """Without tools, "auto" becomes "none" and a forced choice fails; a named choice is
    resolved to its flat ``<namespace>__<name>`` tool."""
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, (list, str, dict)):
        raise ApiError(f"object of type '{type(tools).__name__}' has no len()")
    choice = obj.get("tool_choice", "auto")
    named = isinstance(choice, dict) and choice.get("type") in ("function", "custom")
    if not (tools is not None and len(tools) > 0):
        if isinstance(choice, str) and choice in ("auto", "none"):
            obj["tool_choice"] = "none"
        elif choice == "required":
            raise bad_request("Tool choice 'required' must be specified with 'tools' parameter.", "tool_choice")
        elif named:
            raise bad_request("Tool choice 'function' not found in 'tools' parameter.", "tool_choice")
    elif named:
        name = choice.get("name")
        if not name:
            raise bad_request("Tool choice 'function' not found in 'tools' parameter.", "tool_choice")
        resolved = _resolve_named_choice(name, tools)
        if resolved != name:
            obj["tool_choice"] = {**choice, "name": resolved}


def _resolve_named_choice(name: Any, tools: Any) -> Any:
    exact: set[str] = set()
    local: dict[str, list[str]] = {}
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            namespace, members = tool.get("name"), tool.get("tools")
            if not isinstance(members, list) or not isinstance(namespace, str):
                return name
            for member in members:
                member_name = member.get("name") if isinstance(member, dict) else None
                if isinstance(member_name, str):
                    flat = f"{namespace}{NAMESPACE_SEPARATOR}{member_name}"
                    exact.add(flat)
                    local.setdefault(member_name, []).append(flat)
        elif isinstance(tool.get("name"), str):
            exact.add(tool["name"])
    if name in exact:
        return name
    candidates = local.get(name, [])
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise bad_request(
            f"Tool choice '{name}' is ambiguous: it is defined in more than one namespace "
            f"({', '.join(candidates)}). Select it by its full '<namespace>__<name>' name.",
            "tool_choice",
        )
    raise bad_request("Tool choice 'function' not found in 'tools' parameter.", "tool_choice")
