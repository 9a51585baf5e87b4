"""Messages render: an Anthropic Messages body becomes a chat request, rendered as chat.

The conversion follows vLLM's ``AnthropicServingMessages.to_chat_completion_request``; the
rendering itself is ``render_chat`` with the messages route's tool_choice rules.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol.anthropic import (
    ContentBlock,
    MessagesRequest,
    ThinkingDisabled,
    ThinkingEnabled,
    Tool,
    ToolChangeDefinition,
)
from tokenbridge.protocol.errors import ApiError, bad_request
from tokenbridge.parsers import registry
from tokenbridge.protocol.openai import ChatCompletionRequest
from tokenbridge.render.chat import render_chat
from tokenbridge.render.conversation import BILLING_HEADER

_EFFORTS = ("low", "medium", "high", "xhigh", "max")
# Per-model answers of vLLM's two template probes, keyed by id(ModelContext).
_merge_inline_system: dict[int, bool] = {}
_disabled_effort: dict[int, str] = {}


def render_messages(
    model: ModelContext, cfg: ServeConfig, req: MessagesRequest, request_id: str | None
) -> dict:
    chat = to_chat_request(req, merge_inline_system(model), disabled_thinking_effort(model, cfg, req))
    check_named_tool(chat, cfg)
    return render_chat(model, cfg, chat, request_id, origin="messages")


def check_named_tool(chat: ChatCompletionRequest, cfg: ServeConfig) -> None:
    """A named tool_choice missing from ``tools`` fails where vLLM's parser constrains the call
    (its ``adjust_request``): building a structural tag or the forced-tool JSON schema. The
    Mistral parser's schema skips an unknown name, and no parser means no adjustment."""
    choice = chat.tool_choice
    if not isinstance(choice, dict) or not cfg.tool_call_parser or not cfg.enable_auto_tool_choice:
        return
    if not chat.tools:  # vLLM constrains calls only when there are tools
        return
    name = choice["function"]["name"]
    if name in {(t.get("function") or {}).get("name") for t in chat.tools}:
        return
    rules = registry.tool_render_rules(cfg.tool_call_parser)
    if rules.structural_tag is not None:
        raise ApiError(f"The tool with name '{name}' is not found in the tools list.")
    if rules.forced_schema == "tools":
        raise ApiError(f"Tool '{name}' has not been passed in `tools`.")


def to_chat_request(req: MessagesRequest, merge_system: bool, disabled_effort: str) -> ChatCompletionRequest:
    messages: list[dict] = []
    system = _system_parts(req, merge_system)
    if system:
        messages.append({"role": "system", "content": "".join(system)})
    for msg in req.messages:
        if msg.role == "system":
            text = None if merge_system else _system_text(msg.content)
            if text:
                messages.append({"role": "system", "content": text})
            continue
        out: dict[str, Any] = {"role": msg.role}
        if isinstance(msg.content, str):
            out["content"] = msg.content
        else:
            _convert_blocks(msg.content, msg.role, out, messages)
        if not (msg.role == "user" and "content" not in out):
            messages.append(out)

    chat = ChatCompletionRequest(
        model=req.model,
        messages=messages,
        max_tokens=req.max_tokens,
        max_completion_tokens=req.max_tokens,
        stop=req.stop_sequences,
        temperature=req.temperature,
        top_p=req.top_p,
        top_k=req.top_k,
        cache_salt=req.cache_salt,
        kv_transfer_params=req.kv_transfer_params,
        ec_transfer_params=req.ec_transfer_params,
        vllm_xargs=req.vllm_xargs,
        watermarking=req.watermarking,
        chat_template_kwargs=req.chat_template_kwargs,
    )
    if req.stream:
        chat.stream = True
        chat.stream_options = {"include_usage": True, "continuous_usage_stats": True}
    out_cfg = req.output_config
    if out_cfg is not None and out_cfg.format is not None and out_cfg.format.json_schema:
        chat.response_format = {
            "type": out_cfg.format.type,
            "json_schema": {"name": out_cfg.format.type, "schema": out_cfg.format.json_schema},
        }
    if out_cfg is not None and out_cfg.effort is not None:
        chat.reasoning_effort = out_cfg.effort
    if isinstance(req.thinking, ThinkingDisabled):
        chat.reasoning_effort = disabled_effort
    elif isinstance(req.thinking, ThinkingEnabled):
        chat.thinking_token_budget = req.thinking.budget_tokens
    chat.tool_choice = _tool_choice(req, chat)
    tools = _resolve_tools(req)
    if tools is not None:
        chat.tools = [_chat_tool(t) for t in tools]
        if chat.tool_choice is None:
            chat.tool_choice = "auto"
    return chat


def _system_parts(req: MessagesRequest, merge_system: bool) -> list[str]:
    parts: list[str] = []
    if isinstance(req.system, str):
        if req.system:
            parts.append(req.system)
    elif req.system:
        parts.extend(b.text for b in req.system if b.type == "text" and b.text and not b.text.startswith(BILLING_HEADER))
    if merge_system:
        parts.extend(t for m in req.messages if m.role == "system" and (t := _system_text(m.content)))
    return parts


def _system_text(content: str | list[ContentBlock]) -> str | None:
    """A system message's text without Claude Code's per-request billing header."""
    if isinstance(content, str):
        return None if content.startswith(BILLING_HEADER) else content
    parts = [b.text for b in content if b.type == "text" and b.text and not b.text.startswith(BILLING_HEADER)]
    return "".join(parts) if parts else None


def _convert_blocks(blocks: list[ContentBlock], role: str, out: dict, messages: list[dict]) -> None:
    parts: list[dict] = []
    tool_calls: list[dict] = []
    reasoning: list[str] = []
    for b in blocks:
        if b.type == "text" and b.text:
            parts.append({"type": "text", "text": b.text})
        elif b.type == "image" and b.source:
            parts.append({"type": "image_url", "image_url": {"url": _image_url(b.source)}})
        elif b.type == "thinking" and b.thinking is not None:
            reasoning.append(b.thinking)
        elif b.type == "tool_use":
            tool_calls.append(
                {
                    "id": b.id or f"call_{int(time.time())}",
                    "type": "function",
                    "function": {"name": b.name or "", "arguments": json.dumps(b.input or {})},
                }
            )
        elif b.type == "tool_result":
            if role == "user":
                _user_tool_result(b, messages)
            else:
                parts.append({"type": "text", "text": f"Tool result: {str(b.content) if b.content else ''}"})
    if reasoning:
        out["reasoning"] = "".join(reasoning)
    if tool_calls:
        out["tool_calls"] = tool_calls
    if parts:
        out["content"] = parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts


def _user_tool_result(b: ContentBlock, messages: list[dict]) -> None:
    """A user's tool_result: a tool message, then a user message for any images."""
    text = ""
    images: list[str] = []
    refs: list[dict] = []
    if isinstance(b.content, str):
        text = b.content
    elif isinstance(b.content, list):
        texts: list[str] = []
        for item in b.content:
            kind = item.get("type")
            if kind == "text":
                texts.append(item.get("text", ""))
            elif kind == "image":
                if url := _image_url(item.get("source", {})):
                    images.append(url)
            elif kind == "tool_reference":
                if name := item.get("tool_name") or item.get("name"):
                    refs.append({"type": "tool_reference", "name": name})
        text = "\n".join(texts)
    messages.append({"role": "tool", "tool_call_id": b.tool_use_id or "", "content": text or ""})
    if images:
        messages.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": u}} for u in images]})
    if refs:
        messages.append({"role": "tool", "tool_call_id": b.tool_use_id or "", "content": refs})


def _image_url(source: dict) -> str:
    if source.get("type") == "url":
        return source.get("url", "")
    return f"data:{source.get('media_type', 'image/jpeg')};base64,{source.get('data', '')}"


def _tool_choice(req: MessagesRequest, chat: ChatCompletionRequest) -> Any:
    tc = req.tool_choice
    if tc is None:
        return None
    chat.parallel_tool_calls = not tc.disable_parallel_tool_use
    if tc.type == "tool":
        return {"type": "function", "function": {"name": tc.name}}
    return {"auto": "auto", "any": "required", "none": "none"}[tc.type]


def _resolve_tools(req: MessagesRequest) -> list[Tool] | None:
    """Apply the messages' tool_addition/tool_removal blocks to ``tools``."""
    changes = [
        b
        for m in req.messages
        if not isinstance(m.content, str)
        for b in m.content
        if b.type in ("tool_addition", "tool_removal")
    ]
    if not changes:
        return req.tools
    tools = {t.name: t for t in req.tools or []}
    removed: set[str] = set()
    for b in changes:
        change = b.tool
        if isinstance(change, ToolChangeDefinition):
            name = change.definition.name
            tools[name] = change.definition
        else:
            name = change.name
            if name not in tools:
                raise bad_request(f"{b.type} references tool {name!r}, which is not declared in tools")
            if b.type == "tool_addition":
                t = tools[name]
                tools[name] = Tool(name=t.name, input_schema=t.input_schema, description=t.description, strict=t.strict)
        if b.type == "tool_removal":
            removed.add(name)
        else:
            removed.discard(name)
    return [t for n, t in tools.items() if n not in removed]


def _chat_tool(t: Tool) -> dict:
    """vLLM's ``ChatCompletionToolsParam`` dump: unset strict/defer_loading are omitted."""
    schema = t.input_schema if "type" in t.input_schema else {**t.input_schema, "type": "object"}
    fn: dict[str, Any] = {"name": t.name, "description": t.description, "parameters": schema}
    if t.strict is not None:
        fn["strict"] = t.strict
    if t.defer_loading is not None:
        fn["defer_loading"] = t.defer_loading
    return {"type": "function", "function": fn}


def merge_inline_system(model: ModelContext) -> bool:
    """vLLM's probe: does the template reject a system message after the first turn?

    Inline system messages are then merged into the leading one.
    """
    key = id(model)
    if key not in _merge_inline_system:
        _merge_inline_system[key] = _template_rejects_inline_system(model.chat_template)
    return _merge_inline_system[key]


def _template_rejects_inline_system(template: str | None) -> bool:
    if not template:
        return True
    import jinja2
    import jinja2.ext
    import jinja2.sandbox

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    turns = [{"role": r, "content": "t"} for r in ("system", "user", "system", "user")]
    try:
        env.from_string(template).render(messages=turns, add_generation_prompt=False)
    except jinja2.TemplateError:
        return True
    return False


def disabled_thinking_effort(model: ModelContext, cfg: ServeConfig, req: MessagesRequest) -> str:
    """The reasoning_effort ``thinking.type=disabled`` maps to (vLLM's resolver, mode "auto").

    "none" unless the template rejects it or renders it like some real effort; then "low".
    """
    if not isinstance(req.thinking, ThinkingDisabled):
        return "none"
    key = id(model)
    if key not in _disabled_effort:
        none_ids = _probe(model, cfg, "none")
        same = none_ids is None or any(_probe(model, cfg, e) == none_ids for e in _EFFORTS)
        _disabled_effort[key] = "low" if same else "none"
    return _disabled_effort[key]


def _probe(model: ModelContext, cfg: ServeConfig, effort: str) -> list[int] | None:
    probe = ChatCompletionRequest(messages=[{"role": "user", "content": "Hi"}], reasoning_effort=effort)
    try:
        return render_chat(model, cfg, probe, "probe").token_ids
    except Exception:
        return None
