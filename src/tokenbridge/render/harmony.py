"""gpt-oss chat render through ``openai_harmony`` (vLLM 0.33's ``use_harmony`` path).

vLLM ignores the chat template for ``model_type == "gpt_oss"`` and builds Harmony messages:

* a system message (default identity, ``Knowledge cutoff``, ``Current date`` from today or
  ``$VLLM_SYSTEM_START_DATE``, the reasoning effort when given, the valid channels);
* a developer message when a leading system/developer message gives instructions or the
  request has tools (its function tools go in the ``functions`` namespace);
* the conversation: assistant reasoning on ``analysis``, text on ``final``, tool calls as
  ``commentary`` messages to ``functions.<name>`` with content type ``json``, tool results
  from ``functions.<name>`` (named by their ``tool_call_id``);

then renders it for completion by the assistant. Analysis messages before the last final
answer are dropped, and assistant tool-call headers are rewritten to the legacy
``assistant to=functions.x<|channel|>commentary json`` shape GPT-OSS was trained on.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

from tokenbridge.model.harmony import harmony_encoding
from tokenbridge.protocol.errors import bad_request

REASONING_EFFORTS = ("high", "medium", "low")
BUILTIN_TOOL_TYPES = frozenset({"web_search_preview", "code_interpreter", "container"})


def is_harmony_model(config: dict) -> bool:
    """vLLM's ``use_harmony``: the model's ``config.json`` says ``model_type: gpt_oss``."""
    return config.get("model_type") == "gpt_oss"


def flatten_text(content: Any) -> str | None:
    """The text parts of a message content joined, ``None`` when there are none."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, (str, dict))]
    texts = [t for t in texts if t is not None]
    return "".join(texts) if texts else None


def system_message(reasoning_effort: str | None):
    from openai_harmony import Message, ReasoningEffort, Role, SystemContent

    content = SystemContent.new()
    if reasoning_effort is not None:
        if reasoning_effort not in REASONING_EFFORTS:
            raise bad_request(
                f"reasoning_effort={reasoning_effort!r} is not supported by Harmony. "
                f"Supported values are: {', '.join(REASONING_EFFORTS)}.",
                "reasoning_effort",
            )
        content = content.with_reasoning_effort(ReasoningEffort[reasoning_effort.upper()])
    date = os.environ.get("VLLM_SYSTEM_START_DATE") or datetime.datetime.now().strftime("%Y-%m-%d")
    return Message.from_role_and_content(Role.SYSTEM, content.with_conversation_start_date(date))


def developer_message(instructions: str | None, tools: list[dict] | None = None):
    from openai_harmony import DeveloperContent, Message, Role, ToolDescription

    content = DeveloperContent.new()
    if instructions is not None:
        content = content.with_instructions(instructions)
    functions = []
    for tool in tools or []:
        kind = tool.get("type")
        if kind == "function":
            fn = tool.get("function") or {}
            functions.append(
                ToolDescription.new(fn.get("name"), fn.get("description") or "", parameters=fn.get("parameters"))
            )
        elif kind not in BUILTIN_TOOL_TYPES:
            raise bad_request(f"tool type {kind!r} is not supported.", "tools")
    if functions:
        content = content.with_function_tools(functions)
    return Message.from_role_and_content(Role.DEVELOPER, content)


def conversation_messages(messages: list[dict], keep_empty_answers: bool = False) -> list:
    """Chat Completions messages -> Harmony messages (vLLM's ``parse_chat_inputs_to_harmony_messages``).

    ``keep_empty_answers``: an assistant message without text stays an empty ``final`` message
    (vLLM's Responses conversion keeps it; its chat one drops it)."""
    from openai_harmony import Author, Message, Role, TextContent

    tool_names = {
        call.get("id"): (call.get("function") or {}).get("name")
        for m in messages
        for call in m.get("tool_calls") or []
    }
    out: list = []

    def assistant(text: str, channel: str):
        out.append(Message.from_role_and_content(Role.ASSISTANT, text).with_channel(channel))

    for m in messages:
        role = m.get("role")
        tool_calls = m.get("tool_calls") or []
        if role == "assistant" and tool_calls:
            if text := flatten_text(m.get("content")):
                assistant(text, "commentary")
            if m.get("reasoning"):
                assistant(m["reasoning"], "analysis")
            for call in tool_calls:
                fn = call.get("function") or {}
                msg = Message.from_role_and_content(Role.ASSISTANT, fn.get("arguments") or "")
                out.append(
                    msg.with_channel("commentary")
                    .with_recipient(f"functions.{fn.get('name', '')}")
                    .with_content_type("json")
                )
        elif role == "tool":
            name = tool_names.get(m.get("tool_call_id", ""), "") or ""
            author = Author.new(Role.TOOL, f"functions.{name}")
            text = flatten_text(m.get("content")) or ""
            out.append(
                Message.from_author_and_content(author, text).with_channel("commentary").with_recipient("assistant")
            )
        else:
            if role == "assistant" and m.get("reasoning"):
                assistant(m["reasoning"], "analysis")
            content = m.get("content") or ""
            if isinstance(content, str):
                parts = [TextContent(text=content)]
            else:
                parts = [TextContent(text=p.get("text", "")) for p in content]
            if role == "assistant":
                if parts and parts[0].text:
                    out.append(Message.from_role_and_contents(role, parts).with_channel("final"))
                elif keep_empty_answers and "content" in m:  # a message, not a reasoning item
                    out.append(Message.from_role_and_content(Role.ASSISTANT, "").with_channel("final"))
            elif role in ("system", "developer"):
                instructions = flatten_text(m.get("content"))
                if instructions is not None:
                    out.append(developer_message(instructions))
            else:
                try:
                    out.append(Message.from_role_and_contents(role, parts))
                except ValueError as e:  # an unknown role fails Harmony's pydantic ``Author``
                    raise bad_request(str(e)) from e
    return out


def drop_answered_analysis(messages: list) -> list:
    """Drop analysis messages that precede the last assistant ``final`` message."""
    last_final = max(
        (i for i, m in enumerate(messages) if m.author.role == "assistant" and m.channel == "final"),
        default=-1,
    )
    return [m for i, m in enumerate(messages) if not (i < last_final and m.channel == "analysis")]


def legacy_tool_call_headers(encoding: Any, ids: list[int]) -> list[int]:
    """Rewrite ``assistant<|channel|>C to=R <|constrain|>T`` headers as ``assistant to=R<|channel|>C T``."""
    start, channel, constrain, message = (
        encoding.encode(t, allowed_special="all")[0]
        for t in ("<|start|>", "<|channel|>", "<|constrain|>", "<|message|>")
    )
    out: list[int] = []
    i = 0
    while i < len(ids):
        if ids[i] != start:
            out.append(ids[i])
            i += 1
            continue
        try:
            end = ids.index(message, i + 1)
            ch = ids.index(channel, i + 1, end)
            con = ids.index(constrain, ch + 1, end)
        except ValueError:
            out.append(ids[i])
            i += 1
            continue
        author = encoding.decode(ids[i + 1 : ch])
        chan_rcpt = encoding.decode(ids[ch + 1 : con])
        ctype = encoding.decode(ids[con + 1 : end])
        chan, _, rcpt = chan_rcpt[:-1].partition(" to=")
        if author == "assistant" and chan_rcpt.endswith(" ") and chan and rcpt and ctype:
            out += [start, *encoding.encode(f"assistant to={rcpt}"), channel]
            out += [*encoding.encode(f"{chan} {ctype}"), message]
        else:
            out += ids[i : end + 1]
        i = end + 1
    return out


def render_harmony_ids(
    messages: list[dict], tools: list[dict] | None, reasoning_effort: str | None, vocab: Any = None,
    keep_empty_answers: bool = False,
) -> list[int]:
    """Chat messages (and tools, ``None`` to leave them out) -> gpt-oss prompt ids."""
    from openai_harmony import Conversation, RenderConversationConfig, Role

    if reasoning_effort == "none":
        raise bad_request(f"Harmony does not support reasoning_effort={reasoning_effort!r}", "reasoning_effort")
    rest = list(messages)
    instructions = None
    if rest and isinstance(rest[0], dict) and rest[0].get("role") in ("system", "developer"):
        instructions = flatten_text(rest.pop(0).get("content"))
    harmony = [system_message(reasoning_effort)]
    if instructions or tools:
        harmony.append(developer_message(instructions, tools))
    harmony += conversation_messages(rest, keep_empty_answers)
    encoding = harmony_encoding(vocab)
    ids = encoding.render_conversation_for_completion(
        Conversation.from_messages(drop_answered_analysis(harmony)),
        Role.ASSISTANT,
        config=RenderConversationConfig(auto_drop_analysis=False),
    )
    return legacy_tool_call_headers(encoding, ids)
