"""Completion derender: a list of ``GenerateResponse`` -> one ``CompletionResponse``."""

from __future__ import annotations

import time

from tokenbridge.config import ServeConfig
from tokenbridge.derender import stream
from tokenbridge.derender.decode import check_choices, check_prompt_ids, decode_choice, skip_special_tokens
from tokenbridge.derender.logprobs import completion_logprobs, completion_top_limit
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol import lax
from tokenbridge.protocol.completions import CompletionChoice, CompletionResponse, usage
from tokenbridge.protocol.engine import DerenderCompletionRequest
from tokenbridge.protocol.errors import ApiError, bad_request, validation_error


def handle(model: ModelContext, cfg: ServeConfig, req: DerenderCompletionRequest):
    if req.stream:
        return stream.completion_chunk(model, cfg, req)
    return derender_completion(model, cfg, req)


def _length_error(name: str, n: int, m: int) -> ApiError:
    return validation_error("body", "value_error", f"Value error, {name} length ({n}) must equal generate_responses length ({m})")


def derender_completion(model: ModelContext, cfg: ServeConfig, req: DerenderCompletionRequest) -> CompletionResponse:
    responses = req.generate_responses
    if responses is None:
        raise validation_error("body.DerenderCompletionRequest.generate_responses", "missing", "Field required")
    n = len(responses)
    prompt_tokens = req.prompt_tokens
    if isinstance(prompt_tokens, int) or (prompt_tokens is not None and len(prompt_tokens) != n):
        raise _length_error("prompt_tokens", 1 if isinstance(prompt_tokens, int) else len(prompt_tokens), n)
    prompt_ids = req.prompt_token_ids
    if prompt_ids is not None:
        if len(prompt_ids) != n:
            raise _length_error("prompt_token_ids", len(prompt_ids), n)
        if not all(p is None or isinstance(p, list) for p in prompt_ids):
            raise validation_error("body.DerenderCompletionRequest.prompt_token_ids", "list_type", "Input should be a list of non-negative token ids")
        prompt_ids = [
            None if p is None else lax.token_ids(p, f"body.prompt_token_ids.{i}") for i, p in enumerate(prompt_ids)
        ]
    if not responses:  # the schema's checks passed; an empty list is the handler's 400
        raise bad_request("generate_responses must not be empty")
    for r in responses:
        check_choices(model, cfg, r.choices)
    creq = req.completion_request
    skip_special = skip_special_tokens(creq, False)
    top_limit = completion_top_limit(creq)
    return_ids = creq is not None and bool(creq.return_token_ids)
    tok = model.tokenizer
    choices = []
    completion_tokens = 0
    for i, r in enumerate(responses):
        seed = prompt_ids[i] if prompt_ids is not None else None
        if seed is None:
            seed = r.prompt_token_ids
        check_prompt_ids(model, seed)
        for c in r.choices:
            text, stop_reason = decode_choice(model, c, creq, seed, skip_special)
            lp = None
            if c.logprobs is not None:  # vLLM shows the engine's logprobs even unasked
                lp, _, _ = completion_logprobs(tok, c.logprobs, top_limit, [], 0)
            completion_tokens += len(c.token_ids or ())
            choices.append(
                CompletionChoice(
                    index=len(choices),
                    text=text,
                    logprobs=lp,
                    finish_reason=c.finish_reason or "stop",
                    stop_reason=stop_reason,
                    token_ids=list(c.token_ids) if return_ids else None,
                    prompt_logprobs=r.prompt_logprobs,
                    prompt_token_ids=r.prompt_token_ids if return_ids else None,
                )
            )
    ptoks = sum(prompt_tokens) if prompt_tokens else 0
    kv = responses[0].kv_transfer_params
    if any(r.kv_transfer_params != kv for r in responses[1:]):
        kv = None
    return CompletionResponse(
        id=responses[0].request_id,
        created=int(time.time()),
        model=req.model or model.served_names[0],
        choices=choices,
        usage=usage(ptoks, completion_tokens),
        kv_transfer_params=kv,
        metrics=responses[0].metrics if n == 1 else None,
    )
