"""Responses render: a stateless OpenAI Responses body becomes a chat request, rendered as chat.

Follows vLLM's ``ServingRender.render_responses_request`` for non-Harmony models: the input
items become chat messages (``construct_input_messages``), function tools become chat tools,
and the result is reshaped as vLLM reports it (``resp_`` id, no parse context).
"""

from __future__ import annotations

from typing import Any

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol import response_items
from tokenbridge.protocol.errors import ApiError, bad_request
from tokenbridge.protocol.openai import ChatCompletionRequest
from tokenbridge.protocol.responses import NAMESPACE_SEPARATOR, ResponsesRequest
from tokenbridge.render import sampling
from tokenbridge.render.chat import check_token_budget, random_id, render_chat
from tokenbridge.render.harmony import BUILTIN_TOOL_TYPES, flatten_text, is_harmony_model

_PARTIAL = ("in_progress", "incomplete")
# The schema of the one-string function a custom tool is shown as.
_CUSTOM_PARAMETERS = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The freeform text payload for this tool."}},
    "required": ["input"],
    "additionalProperties": False,
}


def render_responses(model: ModelContext, cfg: ServeConfig, req: ResponsesRequest) -> dict:
    if req.previous_response_id is not None:
        raise ApiError(
            "previous_response_id is not supported by the stateless render endpoint.",
            400,
            "invalid_request_error",
            "previous_response_id",
        )
    if (req.chat_template_kwargs or {}).get("chat_template") is not None and not cfg.trust_request_chat_template:
        raise bad_request(
            "Chat template is passed with request, but --trust-request-chat-template is not set. "
            "Refused request with untrusted chat template."
        )
    truncate = -1 if req.truncation != "disabled" else None
    check_token_budget(req.max_output_tokens, "max_output_tokens", truncate, model.max_model_len)
    chat, extra_args = to_chat_request(req, is_harmony_model(model.config))
    out = render_chat(model, cfg, chat, None, origin="responses")
    out.request_id = req.request_id if req.request_id is not None else f"resp_{random_id()}"
    if extra_args is None:
        out.sampling_params.pop("extra_args", None)
    else:  # the Responses schema hands on its extra args as built, even empty
        out.sampling_params["extra_args"] = sampling.extra_args(extra_args) or {}
    out.reasoning_ended = None
    out.parse_context = None
    out.stream_options = None
    return out


def to_chat_request(req: ResponsesRequest, harmony: bool = False) -> tuple[ChatCompletionRequest, dict | None]:
    """The chat request rendering the same prompt and sampling; also the final ``extra_args``.

    For a Harmony model (``harmony``) the items become the chat messages that render as vLLM's
    own Responses-to-Harmony conversion does, and only function tools are shown."""
    continue_final = _continues_final_message(req.input)
    messages: list[dict] = []
    # Harmony shows empty instructions ("# Instructions" and nothing) above the tools.
    if req.instructions or (harmony and req.instructions == "" and harmony_tools(req.tools or [])):
        messages.append({"role": "system", "content": req.instructions})
    if isinstance(req.input, str):
        messages.append({"role": "user", "content": req.input})
    elif harmony:
        messages.extend(harmony_messages(req.input))
    else:
        for item in req.input:
            msg = _message_from_item(item, messages[-1] if messages else None)
            if msg is not None:
                messages.append(msg)

    # to_sampling_params puts transfer params into extra_args; render hoists them out again.
    extra = dict(req.vllm_xargs or {})
    kv = req.kv_transfer_params or None
    ec = req.ec_transfer_params or None
    extra.pop("kv_transfer_params", None)
    extra.pop("ec_transfer_params", None)
    extra_args = extra if extra or not (kv or ec or req.vllm_xargs) else None
    logprobs = bool(req.include and "message.output_text.logprobs" in req.include)
    effort = req.reasoning.effort if req.reasoning is not None else None
    tools = harmony_tools(req.tools) if harmony else function_tools(req.tools)
    chat = ChatCompletionRequest(
        model=req.model,
        messages=messages,
        tools=tools if req.tools else None,  # function tools only; [] when there are none
        tool_choice=_tool_choice(req.tool_choice),
        parallel_tool_calls=req.parallel_tool_calls,
        include_reasoning=req.include_reasoning,
        reasoning_effort=effort,
        max_tokens=req.max_output_tokens,
        temperature=req.temperature,
        top_p=req.top_p,
        top_k=req.top_k,
        min_p=req.min_p,
        presence_penalty=req.presence_penalty,
        frequency_penalty=req.frequency_penalty,
        repetition_penalty=req.repetition_penalty,
        seed=req.seed,
        stop=req.stop or [],
        stop_token_ids=req.stop_token_ids,
        ignore_eos=req.ignore_eos,
        logit_bias=req.logit_bias,
        logprobs=logprobs,
        top_logprobs=req.top_logprobs if logprobs else 0,
        skip_special_tokens=req.skip_special_tokens,
        spaces_between_special_tokens=req.spaces_between_special_tokens,
        include_stop_str_in_output=req.include_stop_str_in_output,
        structured_outputs=_structured_outputs(req),
        truncate_prompt_tokens=-1 if req.truncation != "disabled" else None,
        add_generation_prompt=not continue_final,
        # Responses prompts are tokenized with TokenizeParams' default: special tokens added.
        add_special_tokens=True,
        continue_final_message=continue_final,
        chat_template_kwargs=req.chat_template_kwargs,
        stream=req.stream,
        request_id=req.request_id,
        cache_salt=req.cache_salt,
        priority=req.priority,
        kv_transfer_params=kv,
        ec_transfer_params=ec,
        vllm_xargs=extra_args,
        watermarking=req.watermarking,
        media_io_kwargs=req.media_io_kwargs,
        mm_processor_kwargs=req.mm_processor_kwargs,
    )
    return chat, extra_args


def function_tools(tools: list[dict]) -> list[dict]:
    """The chat tools the template sees (vLLM's ``get_function_tools``): function tools,
    namespace functions flattened, custom tools as a one-string-argument function."""
    out: list[dict] = []
    for tool in tools:
        kind = tool.get("type")
        if kind == "function":
            out.append(_chat_tool(tool, tool.get("name")))
        elif kind == "custom":
            out.append(_chat_tool({"description": tool.get("description"), "parameters": _CUSTOM_PARAMETERS}, tool.get("name")))
        elif kind == "namespace":
            out.extend(
                _chat_tool(t, f"{tool.get('name')}{NAMESPACE_SEPARATOR}{t.get('name')}")
                for t in tool.get("tools") or []
                if t.get("type") == "function"
            )
    return out


def harmony_tools(tools: list[dict]) -> list[dict] | None:
    """The function tools a Harmony prompt shows (vLLM's ``get_developer_message``): none when
    every tool is a built-in one (or MCP), else every tool must be a function or built-in."""
    if {t.get("type") for t in tools if t.get("type") != "mcp"} <= BUILTIN_TOOL_TYPES:
        return None
    out: list[dict] = []
    for tool in tools:
        kind = tool.get("type")
        if kind == "function":
            out.append(_chat_tool(tool, tool.get("name")))
        elif kind not in BUILTIN_TOOL_TYPES:
            raise bad_request(f"tool type {kind!r} is not supported.", "tools")
    return out


def harmony_messages(items: list[dict]) -> list[dict]:
    """vLLM's ``response_input_to_harmony`` per item, as chat messages the Harmony chat
    conversion renders the same way: a reasoning item shows its ``content`` only, a call its
    bare name (no namespace), a call output needs an earlier call with its ``call_id``."""
    out: list[dict] = []
    calls: dict[Any, Any] = {}
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            role, content = item.get("role"), item.get("content")
            if role in ("system", "developer"):
                if text := flatten_text(content):
                    out.append({"role": "developer", "content": text})
            else:
                out.append({"role": role, "content": content})
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                raise _harmony_input_error(f"No call message found for {call_id}")
            if isinstance(item.get("output"), list):  # Harmony's Message takes text content only
                raise _harmony_input_error(
                    "1 validation error for Message\ncontent.0\n  Input should be a valid dictionary or "
                    "instance of Content [type=model_type]"
                )
            out.append({"role": "tool", "tool_call_id": call_id, "content": item.get("output")})
        elif kind == "reasoning":
            content = item.get("content")
            if content:
                texts = [c.get("text") if isinstance(c, dict) else None for c in content] if isinstance(content, list) else [None]
                if not all(isinstance(t, str) for t in texts):  # vLLM fails joining them (a 500)
                    raise _harmony_input_error("A reasoning item's content must be a list of texts.")
                out.append({"role": "assistant", "reasoning": "\n".join(texts)})
        elif kind == "function_call":
            calls[item.get("call_id")] = item.get("name")
            call = {"id": item.get("call_id"), "type": "function", "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            out.append({"role": "assistant", "tool_calls": [call]})
        else:
            raise _harmony_input_error(f"Unknown input type: {kind}")
    return out


def _harmony_input_error(message: str) -> ApiError:
    return ApiError(message, 400, "invalid_request_error", "input")


def _chat_tool(tool: dict, name: Any) -> dict:
    fn: dict[str, Any] = {"name": name, "description": tool.get("description"), "parameters": tool.get("parameters")}
    for key in ("strict", "defer_loading"):
        if tool.get(key) is not None:
            fn[key] = tool[key]
    return {"type": "function", "function": fn}


def _tool_choice(choice: Any) -> Any:
    """A named function or custom choice becomes chat's named choice. The other dict choices
    (allowed_tools, mcp, built-in tool types) force nothing: vLLM's parsers see a choice that
    is neither "none", "auto", "required" nor named, which its ``type`` string stands for."""
    if isinstance(choice, dict):
        if choice.get("type") in ("function", "custom"):
            return {"type": "function", "function": {"name": choice.get("name")}}
        return choice.get("type")
    return choice


def _structured_outputs(req: ResponsesRequest) -> dict | None:
    fmt = (req.text or {}).get("format")
    if fmt is None:
        return req.structured_outputs
    if req.structured_outputs is not None:
        raise bad_request("Cannot specify both structured_outputs and text.format", "structured_outputs")
    if fmt.get("type") == "json_object":
        return {"json_object": True}
    if fmt.get("type") == "json_schema" and fmt.get("schema") is not None:
        return {"json": fmt["schema"]}
    return None


def _continues_final_message(items: Any) -> bool:
    """A trailing partial assistant message or reasoning item is continued, not answered."""
    if isinstance(items, str) or not items:
        return False
    last = items[-1]
    return last.get("type", "message") in ("message", "reasoning") and last.get("status") in _PARTIAL


def _message_from_item(item: dict, prev: dict | None) -> dict | None:
    """vLLM's ``_construct_message_from_response_item``: a new message, or None after merging
    the item into the previous assistant message."""
    prev_assistant = prev if prev is not None and prev.get("role") == "assistant" else None
    kind = item.get("type")
    if kind == "custom_tool_call" or (kind == "function_call" and response_items.accepts(response_items.FUNCTION_CALL, item)):
        name = item.get("name")
        if kind == "function_call" and item.get("namespace"):
            name = f"{item['namespace']}{NAMESPACE_SEPARATOR}{name}"
        args = item.get("arguments") if kind == "function_call" else _custom_input(item.get("input") or "")
        call = {"id": item.get("call_id"), "function": {"name": name, "arguments": args}, "type": "function"}
        if prev_assistant is not None:
            prev_assistant.setdefault("tool_calls", [])
            if prev_assistant["tool_calls"] is None:
                prev_assistant["tool_calls"] = []
            prev_assistant["tool_calls"].append(call)
            return None
        return {"role": "assistant", "tool_calls": [call]}
    if kind == "reasoning" and response_items.accepts(response_items.REASONING_ITEM, item):
        if item.get("encrypted_content"):
            raise bad_request("Encrypted content is not supported.", "input")
        reasoning = ""
        if item.get("content"):
            reasoning = item["content"][0].get("text")
        elif item.get("summary"):
            reasoning = item["summary"][0].get("text")
        if prev_assistant is not None and prev_assistant.get("reasoning") is None:
            prev_assistant["reasoning"] = reasoning
            return None
        return {"role": "assistant", "reasoning": reasoning}
    if response_items.is_output_message(item):
        first = item["content"][0] if item["content"] else None
        if first is None or first.get("type") != "output_text":  # vLLM fails reading its .text (a 500)
            raise bad_request("An assistant message's first content part must be output_text.", "input")
        if prev_assistant is not None and prev_assistant.get("content") is None:
            prev_assistant["content"] = first["text"]
            return None
        return {"role": "assistant", "content": first["text"]}
    if kind in ("function_call_output", "custom_tool_call_output"):
        return {"role": "tool", "content": item.get("output"), "tool_call_id": item.get("call_id")}
    if item.get("role") == "assistant":
        content = item.get("content")
        text = content if isinstance(content, str) else content[0].get("text") if isinstance(content, list) and content else None
        if text is not None:
            if prev_assistant is not None and prev_assistant.get("content") is None:
                prev_assistant["content"] = text
                return None
            return {"role": "assistant", "content": text}
    if "role" in item:
        return item
    raise bad_request(f"Unsupported input item type: {kind}", "input")


def _custom_input(payload: str) -> str:
    import json

    return json.dumps({"input": payload}, ensure_ascii=False)
