"""OpenAI messages -> chat-template input -> prompt text, as vLLM's chat utilities do it."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

from jinja2 import nodes

from tokenbridge.model import template as tpl
from tokenbridge.protocol.errors import ApiError, bad_request, validation_error


@lru_cache(maxsize=32)
def detect_content_format(source: str) -> str:
    """``"openai"`` when the template loops over ``message.content``, else ``"string"``."""
    try:
        ast = tpl.environment().parse(source)
    except Exception:
        return "string"
    for loop in ast.find_all(nodes.For):
        it = loop.iter
        for n in [it, *it.find_all(nodes.Node)]:
            if isinstance(n, nodes.Getattr) and n.attr == "content":
                return "openai"
            if isinstance(n, nodes.Getitem) and isinstance(n.arg, nodes.Const) and n.arg.value == "content":
                return "openai"
    return "string"


def _text_parts(content: list) -> list[str]:
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if kind in ("text", "input_text", "output_text", "refusal") or (kind is None and "text" in part):
                out.append(part.get("text") or part.get("refusal") or "")
            else:
                raise bad_request(f"Unsupported content part type: {kind}")
    return out


def _tool_arguments(args: Any) -> dict:
    """Tool-call arguments as templates expect them: an object (bad or non-object JSON -> {})."""
    if not args:
        return {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return {}
    return args if isinstance(args, dict) else {}


def _tool_calls(calls: list) -> list[dict]:
    out = []
    for call in calls:
        if not isinstance(call, dict):
            raise bad_request("assistant tool_calls entries must be objects.", "tool_calls")
        fn = call.get("function")
        if call.get("type", "function") != "function" or not isinstance(fn, dict):
            raise bad_request("chat completions only support assistant tool_calls of type 'function'.", "tool_calls")
        call = copy.deepcopy(call)
        call["function"]["arguments"] = _tool_arguments(fn.get("arguments"))
        out.append(call)
    return out


def prepare_messages(messages: list[dict], content_format: str) -> list[dict]:
    """The conversation the template sees, built field by field as vLLM's
    ``parse_chat_message_content`` builds it: null content is empty, text parts are joined
    (string format) or kept as text parts (openai format), tool results are plain text,
    and tool-call arguments are objects."""
    conv = []
    for m in messages:
        if not isinstance(m, dict) or "role" not in m:
            raise bad_request("Each message must be an object with a role.")
        role = m["role"]
        content = m.get("content")
        texts = [content] if isinstance(content, str) else _text_parts(content or [])
        if content_format == "openai" and role != "tool":
            msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": t} for t in texts]}
        else:
            msg = {"role": role, "content": "\n".join(texts)}
        reasoning = m.get("reasoning")
        if reasoning is None:
            reasoning = m.get("reasoning_content")
        if role == "assistant":
            calls = m.get("tool_calls")
            if isinstance(calls, list) and calls:
                msg["tool_calls"] = _tool_calls(calls)
            if reasoning is not None:
                msg["reasoning"] = reasoning
                msg["reasoning_content"] = reasoning
        elif role == "tool" and "tool_call_id" in m:
            msg["tool_call_id"] = m["tool_call_id"]
        if isinstance(m.get("name"), str):
            msg["name"] = m["name"]
        if isinstance(m.get("task"), str):
            msg["task"] = m["task"]
        if role == "developer":
            msg["tools"] = m.get("tools")
        conv.append(msg)
    return conv


def check_tool_call_arguments(messages: list[dict]) -> None:
    """The request schema types assistant ``tool_calls[].function.arguments`` as a string."""
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        if not isinstance(calls, list):
            continue
        for i, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and "arguments" in fn and not isinstance(fn["arguments"], str):
                raise validation_error(
                    f"body.{i}.ChatCompletionMessageFunctionToolCallParam.function",
                    "string_type",
                    "Input should be a valid string",
                )


def apply_template(
    source: str,
    conversation: list[dict],
    tools: list[dict] | None,
    special_tokens: dict[str, str],
    add_generation_prompt: bool,
    continue_final_message: bool,
    kwargs: dict[str, Any],
    documents: list[dict] | None = None,
) -> str:
    ctx = dict(special_tokens)
    ctx.update(kwargs)
    ctx.update(
        messages=conversation,
        tools=tools,
        documents=documents,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
    )
    try:
        text = tpl.render(source, **ctx)
    except tpl.TemplateError as e:
        raise ApiError(str(e), 400, "BadRequestError") from e
    except Exception as e:  # a template bug must not become a 500
        raise ApiError(f"Error rendering chat template: {e}", 400, "BadRequestError") from e
    if continue_final_message:
        text = _cut_after_final_message(text, conversation)
    return text


def _cut_after_final_message(text: str, conversation: list[dict]) -> str:
    """transformers' rule: end the prompt right after the final message's content."""
    final = conversation[-1].get("content") if conversation else None
    if isinstance(final, list):
        texts = [p.get("text", "") for p in final if isinstance(p, dict)]
        final = texts[-1] if texts else ""
    if not isinstance(final, str):
        return text
    stripped = final.strip()
    if stripped not in text:
        raise bad_request("continue_final_message is set but the final message does not appear in the chat after applying the chat template!")
    loc = text.rindex(stripped)
    if text[loc : loc + len(final.lstrip())] == final:
        return text[: loc + len(final.lstrip())]
    return text[: loc + len(stripped)]
