"""Completion render: one ``GenerateRequest`` per prompt (text or token ids)."""

from __future__ import annotations

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol.engine import GenerateRequest
from tokenbridge.protocol.errors import bad_request
from tokenbridge.protocol.openai import CompletionRequest, completion_prompts
from tokenbridge.render import sampling
from tokenbridge.render.chat import (
    check_prompt_chars,
    check_token_budget,
    encode_prompt,
    common_checks,
    fit_prompt,
    random_id,
    resolve_max_tokens,
    sampling_values,
    stream_options,
    transfer_params,
)

def _prompts(req: CompletionRequest) -> list[str | list[int]]:
    if req.prompt is None or req.prompt == "":
        raise bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt")
    prompts = completion_prompts(req.prompt)
    if not prompts:
        raise bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt")
    return prompts


def check_suffix(req: CompletionRequest) -> None:
    """vLLM's ``render_completion`` suffix rules; no served renderer does FIM completion."""
    if req.suffix is None:
        return
    if req.echo:
        raise bad_request("Echo is unsupported with suffix.", "suffix")
    if req.truncate_prompt_tokens is not None:
        raise bad_request("suffix is not supported with truncate_prompt_tokens", "suffix")
    p = req.prompt
    if isinstance(p, str) or (isinstance(p, list) and all(isinstance(x, str) for x in p)):
        raise bad_request("suffix is only supported for models with FIM completion rendering", "suffix")
    raise bad_request("suffix requires text prompt input for FIM completion rendering", "suffix")


def render_completion(
    model: ModelContext, cfg: ServeConfig, req: CompletionRequest, request_id: str | None
) -> list[GenerateRequest]:
    common_checks(req)
    check_suffix(req)
    prompts = _prompts(req)
    check_token_budget(req.max_tokens or 0, "max_tokens", req.truncate_prompt_tokens, model.max_model_len)
    add_special = True if req.add_special_tokens is None else req.add_special_tokens
    base = request_id or req.request_id or random_id()
    encoded: list[list[int]] = []
    for p in prompts:
        if isinstance(p, str):
            check_prompt_chars(len(p), model, req.truncate_prompt_tokens)
            ids = encode_prompt(model, p, add_special, req.truncate_prompt_tokens)
        else:
            ids = list(p)
        ids = fit_prompt(ids, req.truncate_prompt_tokens, model.max_model_len)
        if not ids:
            raise bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt")
        encoded.append(ids)

    kv, ec = transfer_params(req)
    out = []
    for i, ids in enumerate(encoded):
        max_tokens = resolve_max_tokens(
            req.max_tokens, model.generation_defaults, len(ids), req.truncate_prompt_tokens, model.max_model_len
        )
        if req.echo and req.max_tokens == 0:
            max_tokens = 1  # echo without generation still schedules one step
        values = sampling_values(req, model, max_tokens, req.skip_special_tokens)
        values["logprobs"] = None if req.logprob_token_ids else req.logprobs
        values["prompt_logprobs"] = req.prompt_logprobs
        if req.prompt_logprobs is None and req.echo:
            values["prompt_logprobs"] = req.logprobs
        rid = f"cmpl-{base}" if len(encoded) == 1 else f"cmpl-{base}-{i}"
        out.append(
            GenerateRequest(
                request_id=rid,
                token_ids=ids,
                sampling_params=sampling.serialize(values),
                model=req.model,
                return_token_ids=req.return_token_ids,
                stream=bool(req.stream),
                stream_options=stream_options(req),
                cache_salt=req.cache_salt,
                priority=req.priority,
                kv_transfer_params=kv,
                ec_transfer_params=ec,
            )
        )
    return out
