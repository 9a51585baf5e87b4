"""``ServeConfig``: the server flags render and derender consult, parsed once by the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ServeConfig:
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    enable_auto_tool_choice: bool = False
    chat_template_content_format: str = "auto"
    default_chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    trust_request_chat_template: bool = False
    max_logprobs: int = 20
    api_keys: tuple[str, ...] = ()
    max_body_bytes: int = 64 * 1024 * 1024
    max_n_sequences: int = 1024
    root_path: str = ""
    cors_origins: tuple[str, ...] = ()
    cors_methods: tuple[str, ...] = ("*",)
    cors_headers: tuple[str, ...] = ("*",)
    cors_credentials: bool = False
    request_id_headers: bool = False
    docs: bool = True
    access: Any = None  # logs.Access: what is logged per request
    # The OpenAI frontend over a token engine (gateway/): off without an engine URL.
    engine_url: str | None = None
    engine_api_key: str | None = None
    engine_connect_timeout: float = 10.0
    engine_first_token_timeout: float = 600.0
    engine_idle_timeout: float = 120.0
    # How a stream sends tool calls: "incremental" (id and name once known, then argument
    # deltas as written) or "whole" (each call once decided). One-shot answers never change.
    tool_call_streaming: str = "incremental"
