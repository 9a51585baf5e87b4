"""Completion render: one ``GenerateRequest`` per prompt (text or token ids)."""

from __future__ import annotations

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol.errors import bad_request
from tokenbridge.protocol.openai import CompletionRequest
from tokenbridge.render import sampling
from tokenbridge.render.chat import (
    check_prompt_chars,
    check_prompt_tokens,
    common_checks,
    random_id,
    resolve_max_tokens,
    sampling_values,
    stream_options,
    transfer_params,
    truncate,
)

_COMPLETION_DEFAULT_MAX_TOKENS = 16


def _prompts(req: CompletionRequest) -> list[str | list[int]]:
    p = req.prompt
    if p is None or p == "" or p == []:
        raise bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt")
    if isinstance(p, str):
        return [p]
    if all(isinstance(x, int) for x in p):
        return [p]  # one token-id prompt
    return list(p)


def render_completion(
    model: ModelContext, cfg: ServeConfig, req: CompletionRequest, request_id: str | None
) -> list[dict]:
    common_checks(req)
    prompts = _prompts(req)
    add_special = True if req.add_special_tokens is None else req.add_special_tokens
    base = request_id or req.request_id or random_id()
    encoded: list[list[int]] = []
    for p in prompts:
        if isinstance(p, str):
            check_prompt_chars(p, model.max_model_len)
            ids = model.tokenizer.encode(p, add_special_tokens=add_special)
        else:
            if any(i < 0 for i in p):
                raise bad_request("token ids must be non-negative", "prompt")
            ids = list(p)
        ids = truncate(ids, req.truncate_prompt_tokens, model.max_model_len)
        check_prompt_tokens(len(ids), model.max_model_len)
        if not ids:
            raise bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt")
        encoded.append(ids)

    kv, ec = transfer_params(req)
    out = []
    for i, ids in enumerate(encoded):
        requested = req.max_tokens if req.max_tokens is not None else None
        if requested is None and "max_new_tokens" not in model.generation_defaults:
            requested = _COMPLETION_DEFAULT_MAX_TOKENS
        max_tokens = resolve_max_tokens(requested, model.generation_defaults, len(ids), model.max_model_len)
        values = sampling_values(req, model, max_tokens, req.skip_special_tokens)
        if req.logprobs is not None:
            values["logprobs"] = req.logprobs
        if req.echo and req.logprobs is not None:
            values["prompt_logprobs"] = req.logprobs
        if req.prompt_logprobs is not None:
            values["prompt_logprobs"] = req.prompt_logprobs
        rid = f"cmpl-{base}" if len(encoded) == 1 else f"cmpl-{base}-{i}"
        out.append(
            {
                "request_id": rid,
                "token_ids": ids,
                "token_offsets": None,
                "features": None,
                "content_parts": None,
                "sampling_params": sampling.serialize(values),
                "model": req.model,
                "reasoning_ended": None,
                "reasoning_parser_kwargs": None,
                "return_token_ids": req.return_token_ids,
                "output_mode": "tokens",
                "parse_context": None,
                "stream": bool(req.stream),
                "stream_options": stream_options(req),
                "cache_salt": req.cache_salt,
                "priority": req.priority,
                "kv_transfer_params": kv,
                "ec_transfer_params": ec,
            }
        )
    return out
