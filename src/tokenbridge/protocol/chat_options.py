"""What a chat request asks of the model beyond its messages, read the way vLLM reads it.

Render and derender both need these (derender rebuilds the parser context the render saw), so
they live below both.
"""

from __future__ import annotations

from typing import Any


def effective_tool_choice(req: Any) -> Any:
    """``tool_choice`` as vLLM applies it: unset means ``auto`` with tools, ``none`` without."""
    if req.tool_choice is None:
        return "auto" if req.tools else "none"
    return req.tool_choice


def template_kwargs(req: Any, cfg: Any, add_generation_prompt: bool, continue_final: bool) -> dict:
    """The effective chat_template_kwargs vLLM reports (``cfg``'s server defaults, request, flags)."""
    kw: dict[str, Any] = {"cohere_format": "cmd4"}
    kw.update(cfg.default_chat_template_kwargs)
    user = req.chat_template_kwargs or {}
    # vLLM's merge_kwargs: a request value of None or "auto" leaves the key unset.
    kw.update((k, v) for k, v in user.items() if v is not None and not (type(v) is str and v == "auto"))
    kw["add_generation_prompt"] = add_generation_prompt
    kw["continue_final_message"] = continue_final
    documents = getattr(req, "documents", None)
    if documents is not None:  # merge_kwargs drops unset (None) overrides
        kw["documents"] = documents
    effort = getattr(req, "reasoning_effort", None)
    if effort is not None:  # vLLM's build_chat_params: the template sees the effort
        kw["reasoning_effort"] = effort
        if "enable_thinking" not in user:
            kw["enable_thinking"] = effort != "none"
    return kw


def history_tool_call_count(messages: list[dict]) -> int:
    return sum(
        len(m.get("tool_calls") or [])
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("tool_calls"), list)
    )
