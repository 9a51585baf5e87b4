"""``ServeConfig``: the server flags render and derender consult, parsed once by the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# One token's worth of a body: an output token with its logprob and top-logprob entries
# (~64 bytes of JSON each), or several characters of escaped prompt text.
_BODY_BYTES_PER_LOGPROB = 64
_BODY_FLOOR = 2 * 1024 * 1024
_BODY_CEILING = 64 * 1024 * 1024


def default_max_body_bytes(max_model_len: int, max_logprobs: int) -> int:
    """The largest body a request for this model can need: ``max_model_len`` tokens, each with
    ``max_logprobs`` top entries, plus 1 MiB for everything else; at least 2 MiB and never
    above 64 MiB (``--max-body-bytes`` sets any other limit)."""
    per_token = _BODY_BYTES_PER_LOGPROB * (max(max_logprobs, 0) + 2)
    return max(_BODY_FLOOR, min(_BODY_CEILING, max_model_len * per_token + (1 << 20)))


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
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: float = 5.0
    max_connections: int = 0  # 0: below the process's file limit
