"""OpenAI messages -> chat-template input -> prompt text, as vLLM's chat utilities do it."""

from __future__ import annotations

import json
from typing import Any, Callable

from tokenbridge.model import fast_template
from tokenbridge.model import template as tpl
from tokenbridge.model.lru import BoundedLRU
from tokenbridge.protocol.errors import ApiError, bad_request, validation_error


# Verdicts by template source, bounded by source size (a request may bring its own template).
_formats: BoundedLRU[str, str] = BoundedLRU(1 << 20)


def detect_content_format(source: str) -> str:
    """``"openai"`` when the template loops over ``message.content``, else ``"string"``."""
    found = _formats.get(source)
    if found is None:
        found = _content_format(source)
        _formats.put_many([(source, found, len(source))])
    return found


def _content_format(source: str) -> str:
    known = fast_template.content_format(source)
    return known if known is not None else parsed_content_format(source)


def parsed_content_format(source: str) -> str:
    """vLLM's detection, on the Jinja2 AST of ``source``."""
    from jinja2 import nodes

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


_TEXT_KEYS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal", "thinking": "thinking"}


_MEDIA_PARTS = ("image_url", "input_image", "audio_url", "input_audio", "video_url",
                "image_embeds", "audio_embeds", "video_embeds", "image_pil")


def _check_parts(content: list, role: Any = None) -> None:
    """The request schema's content-part check (every render path, mistral and Harmony too).
    Only a tool message's parts may be the Responses API's ``input_text``/``output_text``."""
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text") and role != "tool":
            raise bad_request("1 validation error for ValidatorIterator\n0.ChatCompletionContentPartTextParam.type\n"
                              "  Input should be 'text' [type=literal_error]")
        if kind not in (*_MEDIA_PARTS, "tool_reference", "file"):
            _text_parts([part])


def check_content_parts(messages: list[dict]) -> None:
    """Each message's content parts, as vLLM reads them when it renders a chat body."""
    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("content"), (list, dict)):
            _check_parts(list(m["content"]), m.get("role"))


class ToolReference(str):
    """A ``tool_reference`` part's tool name: text to a template that joins the parts, a
    ``{"type": "tool_reference"}`` part to one that reads them (and a tool message keeps its
    parts then)."""


def _text_parts(content: list) -> list[str]:
    """The text of each content part, as vLLM's request schema and
    ``parse_chat_message_content_part`` read them (every part an object with a ``type``)."""
    out = []
    for part in content:
        if not isinstance(part, dict):
            raise bad_request("1 validation error for ValidatorIterator\n0.ChatCompletionContentPartTextParam\n"
                              "  Input should be a valid dictionary [type=dict_type]")
        kind = part.get("type")
        if kind == "tool_reference":  # a deferred tool's name, which the template expands
            if isinstance(part.get("name"), str):
                out.append(ToolReference(part["name"]))
            continue
        key = _TEXT_KEYS.get(kind) if isinstance(kind, str) else None
        if key is None:
            if kind not in _MEDIA_PARTS:
                field = "type" if kind is None else "text"
                raise bad_request(f"1 validation error for ValidatorIterator\n0.ChatCompletionContentPartTextParam.{field}\n"
                                  "  Field required [type=missing]")
            raise bad_request(f"Unsupported content part type: {kind}")
        text = part.get(key)
        if not isinstance(text, str):
            raise bad_request(f"1 validation error for ValidatorIterator\n0.ChatCompletionContentPartTextParam.{key}\n"
                              "  Input should be a valid string [type=string_type]")
        out.append(text)
    return out


def _tool_arguments(args: Any, parse: Any = json.loads) -> dict:
    """Tool-call arguments as templates expect them: an object (bad or non-object JSON -> {})."""
    if not args:
        return {}
    if isinstance(args, str):
        try:
            args = parse(args)
        except ValueError:
            return {}
    return args if isinstance(args, dict) else {}


def _tool_calls(calls: list, parse: Any = json.loads) -> list[dict]:
    out = []
    for call in calls:
        if not isinstance(call, dict):
            raise bad_request("assistant tool_calls entries must be objects.", "tool_calls")
        fn = call.get("function")
        if call.get("type", "function") != "function" or not isinstance(fn, dict):
            raise bad_request("chat completions only support assistant tool_calls of type 'function'.", "tool_calls")
        # A new call and function object; the request's own stay untouched.
        out.append({**call, "function": {**fn, "arguments": _tool_arguments(fn.get("arguments"), parse)}})
    return out


def as_parsed_by_vllm(messages: list[dict]) -> list[dict]:
    """The messages as vLLM's chat parsing hands them to tokenizers that render chats
    themselves (mistral-common): assistant tool-call arguments as objects, and a dict
    ``content`` as the list of its keys (pydantic iterates it)."""
    out = []
    for m in messages:
        if not isinstance(m, dict):
            out.append(m)
            continue
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if isinstance(calls, list) and calls:
            m = {**m, "tool_calls": _tool_calls(calls)}
        if isinstance(m.get("content"), dict):
            m = {**m, "content": list(m["content"])}
        out.append(m)
    return out


BILLING_HEADER = "x-anthropic-billing-header"


def _without_billing_header(content: Any) -> Any:
    """A system message's text parts without Claude Code's first line ``x-anthropic-billing-
    header: ...`` (its per-request hash would defeat prefix caching); a part left empty goes."""
    if isinstance(content, str):
        if not content.startswith(BILLING_HEADER):
            return content
        rest = content.partition("\n")[2]
        return [{"type": "text", "text": rest}] if rest else []
    if not isinstance(content, list):
        return content
    out = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else None
        if not (isinstance(text, str) and text.startswith(BILLING_HEADER)):
            out.append(part)
        elif rest := text.partition("\n")[2]:
            out.append({**part, "text": rest})
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
        if role == "system" and content:
            content = _without_billing_header(content)
        if content_format != "openai" and isinstance(content, str):  # most messages: one string
            msg: dict[str, Any] = {"role": role, "content": content}
        else:
            texts = [content] if isinstance(content, str) else _text_parts(content or [])
            if content_format == "openai":
                msg = {"role": role, "content": [
                    {"type": "tool_reference", "name": str(t)} if type(t) is ToolReference else {"type": "text", "text": t}
                    for t in texts
                ]}
                if role == "tool" and not any(type(t) is ToolReference for t in texts):
                    msg["content"] = "\n".join(texts)
            else:  # parts are joined, empty ones dropped
                msg = {"role": role, "content": "\n".join(t for t in texts if t)}
        # Only ``reasoning``: the chat schema renames ``reasoning_content`` to it; /tokenize's
        # does not, and there vLLM leaves it out.
        reasoning = m.get("reasoning")
        if role == "assistant":
            calls = m.get("tool_calls")
            if isinstance(calls, list) and calls:
                # Objects shared across renders (``tpl.shared_json``): only templates see these.
                msg["tool_calls"] = _tool_calls(calls, tpl.shared_json.parse)
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


def check_tool_call_arguments(messages: list[dict], full: bool = True, parts: bool = True) -> None:
    """The request schema's assistant ``tool_calls`` entries (``ChatCompletionMessage
    FunctionToolCallParam``): ``id``, ``type`` and ``function`` with string ``name`` and
    ``arguments`` are all required (custom tool calls are left to the render checks).
    ``parts``: the content parts too (a derender's ``chat_request`` leaves them unchecked)."""
    for m in messages:
        if full and parts and isinstance(m, dict) and isinstance(m.get("content"), (list, dict)):
            _check_parts(list(m["content"]), m.get("role"))
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        if full and isinstance(calls, (str, dict)) and calls:
            calls = list(calls)  # pydantic iterates them: characters, keys
        if not isinstance(calls, list):
            continue
        for i, call in enumerate(calls):
            loc = f"body.{i}.ChatCompletionMessageFunctionToolCallParam"
            if full and not isinstance(call, dict):
                raise validation_error(loc, "dict_type", "Input should be a valid dictionary")
            if full and isinstance(call.get("type"), str) and call["type"] not in ("function", "custom"):
                raise validation_error(f"{loc}.type", "literal_error", "Input should be 'function'")
            if full and call.get("type") == "custom" and not isinstance(call.get("custom"), dict):
                raise validation_error(
                    f"body.{i}.ChatCompletionMessageCustomToolCallParam.custom", "missing", "Field required"
                )
            if not isinstance(call, dict) or call.get("type") == "custom":
                continue
            fn = call.get("function")
            if not full:  # converted bodies: only the arguments type is checked
                if isinstance(fn, dict) and "arguments" in fn and not isinstance(fn["arguments"], str):
                    raise validation_error(f"{loc}.function", "string_type", "Input should be a valid string")
                continue
            for key, value in (("id", call.get("id")), ("type", call.get("type")), ("function", fn)):
                if key not in call:
                    raise validation_error(f"{loc}.{key}", "missing", "Field required")
                if key != "function" and not isinstance(value, str):
                    raise validation_error(f"{loc}.{key}", "string_type", "Input should be a valid string")
            if not isinstance(fn, dict):
                raise validation_error(f"{loc}.function", "dict_type", "Input should be a valid dictionary")
            if "arguments" not in fn:
                raise validation_error(f"{loc}.function", "missing", "Field required")
            for key in ("name", "arguments"):
                if key not in fn:
                    raise validation_error(f"{loc}.function.{key}", "missing", "Field required")
                if not isinstance(fn[key], str):
                    raise validation_error(
                        f"{loc}.function" if key == "arguments" else f"{loc}.function.{key}",
                        "string_type",
                        "Input should be a valid string",
                    )


def tool_dicts(tools: list[dict] | None) -> list[dict] | None:
    """``[tool.model_dump() for tool in request.tools]``: the fields of vLLM's
    ``ChatCompletionToolsParam``/``FunctionDefinition`` in declaration order, unknown keys
    dropped, ``strict``/``defer_loading`` only when set."""
    if tools is None:
        return None
    out = []
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict):
            out.append(tool)
            continue
        fn = tool["function"]
        defer = tool.get("defer_loading")
        f = {"name": fn.get("name"), "description": fn.get("description"), "parameters": fn.get("parameters")}
        if fn.get("strict") is not None:
            f["strict"] = fn["strict"]
        fdefer = fn.get("defer_loading")
        if fdefer is None:
            fdefer = defer
        if fdefer is not None:
            f["defer_loading"] = fdefer
        d = {"type": tool.get("type", "function"), "function": f}
        if defer is not None:
            d["defer_loading"] = defer
        out.append(d)
    return out


def developer_to_system(source: str, conversation: list[dict]) -> list[dict]:
    """vLLM's ``safe_apply_chat_template``: a template that never names the developer role
    sees developer messages as system messages, all merged into one leading system message."""
    if not any(m.get("role") == "developer" for m in conversation):
        return conversation
    if '"developer"' in source or "'developer'" in source:
        return conversation
    converted = []
    for m in conversation:
        if m.get("role") == "developer":
            m = dict(m, role="system")
            m.pop("tools", None)
        converted.append(m)
    contents, rest, merge = [], [], False
    for i, m in enumerate(converted):
        if m.get("role") == "system":
            if i > 0 or contents:
                merge = True
            c = m.get("content", "")
            if isinstance(c, list):
                c = "\n".join(p["text"] if isinstance(p, dict) else p for p in c
                              if (isinstance(p, dict) and "text" in p) or isinstance(p, str))
            if c:
                contents.append(c)
        else:
            rest.append(m)
    if not merge:
        return converted
    return [{"role": "system", "content": "\n\n".join(contents)}, *rest]


def apply_template(
    source: str, conversation: list[dict], continue_final_message: bool, context: Callable[[], dict[str, Any]]
) -> str:
    """The template's output for ``conversation``. ``context()`` gives the other variables
    (``template_context``); it is called once the conversation passed its own checks, so a
    request that fails both ways fails as transformers does."""
    conversation, final = _template_conversation(source, conversation, continue_final_message)
    return _render(source, conversation, final, context())


def template_context(
    tools: list[dict] | None,
    special_tokens: dict[str, str],
    add_generation_prompt: bool,
    continue_final_message: bool,
    kwargs: dict[str, Any],
    documents: list[dict] | None = None,
) -> dict[str, Any]:
    """The template's variables but ``messages``: what a request's fields other than its
    messages give it (a chat shape keeps them)."""
    if "messages" in kwargs:  # transformers passes the conversation as ``messages`` too
        raise bad_request("jinja2.environment.Template.render() got multiple values for keyword argument 'messages'")
    ctx = dict(special_tokens)
    ctx.update(kwargs)
    ctx.update(
        # A request's chat_template_kwargs "tools" and "documents" win over its own fields.
        tools=_template_tools(kwargs["tools"]) if "tools" in kwargs else tool_dicts(tools),
        documents=kwargs.get("documents", documents),
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
    )
    return ctx


def _template_conversation(
    source: str, conversation: list[dict], continue_final_message: bool
) -> tuple[list[dict], str | None]:
    """The conversation as the template gets it, and the final message's text to cut at."""
    conversation = developer_to_system(source, conversation)
    if continue_final_message:
        return _tag_final_message(conversation)
    return conversation, None


def _render(source: str, conversation: list[dict], final: str | None, context: dict[str, Any]) -> str:
    try:
        text = tpl.render(source, **context, messages=conversation)
    except tpl.TemplateError as e:
        raise ApiError(str(e), 400, "BadRequestError") from e
    except Exception as e:  # a template bug must not become a 500
        raise ApiError(f"Error rendering chat template: {e}", 400, "BadRequestError") from e
    if final is not None:
        text = _cut_at_final_tag(text, final)
    return text


def _template_tools(tools: Any) -> list:
    """transformers' ``apply_chat_template`` tools: JSON schemas (dicts) as given; anything
    else it cannot turn into one is a 400 with its message."""
    try:
        items = list(tools)
    except TypeError as e:
        raise bad_request(str(e)) from None
    if not all(isinstance(t, dict) for t in items):
        raise bad_request(
            "Tools should either be a JSON schema, or a callable function with type hints and a "
            "docstring suitable for auto-conversion to a schema."
        )
    return items


_FINAL_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def _tag_final_message(conversation: list[dict]) -> tuple[list[dict], str | None]:
    """transformers' rule: mark the end of the final message's (last text) content with a tag."""
    if not conversation:
        return conversation, None
    last = dict(conversation[-1])
    final = last.get("content")
    if isinstance(final, str):
        last["content"] = final + _FINAL_TAG
    elif isinstance(final, list):
        parts = list(final)
        for i in range(len(parts) - 1, -1, -1):
            p = parts[i]
            if isinstance(p, dict) and "text" in p:
                final = p["text"]
                parts[i] = dict(p, text=p["text"] + _FINAL_TAG)
                break
        else:
            raise bad_request("continue_final_message is set but we could not find any text to continue in the final message!")
        last["content"] = parts
    else:
        return conversation, None
    if not isinstance(final, str):
        return conversation, None
    return [*conversation[:-1], last], final


def _cut_at_final_tag(text: str, final: str) -> str:
    """End the prompt where the tagged final message ends (trailing spacing the template trimmed stays trimmed)."""
    if final.strip() not in text or _FINAL_TAG.strip() not in text:
        raise bad_request("continue_final_message is set but the final message does not appear in the chat after applying the chat template!")
    loc = text.rindex(_FINAL_TAG.strip())
    if text[loc : loc + len(_FINAL_TAG)] == _FINAL_TAG:
        return text[:loc]
    return text[:loc].rstrip()
