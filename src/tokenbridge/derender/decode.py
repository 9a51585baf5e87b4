"""Shared one-shot steps: bounds checks before any decoding, and a choice's final text."""

from __future__ import annotations

from typing import Any

from tokenbridge.config import ServeConfig
from tokenbridge.derender.detokenizer import Detokenizer
from tokenbridge.derender.stops import drop_stop_token, find_stop_string, stop_strings
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol.engine import GenerateChoice
from tokenbridge.protocol.errors import bad_request


def check_choices(model: ModelContext, cfg: ServeConfig, choices: list[GenerateChoice]) -> None:
    """vLLM's limits, checked before any decode."""
    if len(choices) > cfg.max_n_sequences:
        raise bad_request(f"Too many choices ({len(choices)}); at most {cfg.max_n_sequences} are allowed.")
    for c in choices:
        n = len(c.token_ids or ())
        if n > model.max_model_len:
            raise bad_request(
                f"token_ids length ({n}) in choice {c.index} exceeds max_model_len ({model.max_model_len})."
            )
        check_choice_bounds(model, cfg, c)
    for c in choices:
        if not c.token_ids:
            raise bad_request(f"choice {c.index} has empty or null token_ids")


def check_choice_bounds(model: ModelContext, cfg: ServeConfig, c: GenerateChoice) -> None:
    """One choice's ids within the model's vocabulary, and its logprobs within the limits."""
    check_vocab(model, c.token_ids, f"token_ids of choice {c.index}", decoded_as_token_ids=True)
    if c.logprobs is None or c.logprobs.content is None:
        return
    content = c.logprobs.content
    if len(content) > model.max_model_len:
        raise bad_request(f"logprobs length in choice {c.index} exceeds max_model_len ({model.max_model_len}).")
    # Lists first, then one C-level pass each: a 2k-token top-5 answer has 12k entries.
    tops = [e.top_logprobs for e in content]
    limit = max(cfg.max_logprobs, 0) + 1
    if max(map(len, tops), default=0) > limit:
        longest = next(len(t) for t in tops if len(t) > limit)
        raise bad_request(
            f"top_logprobs length ({longest}) in choice {c.index} exceeds max_logprobs ({cfg.max_logprobs})."
        )
    what = f"logprobs of choice {c.index}"
    check_vocab(model, [e.token_id for e in content], what)
    check_vocab(model, [t.token_id for top in tops for t in top], what)


def check_vocab(model: ModelContext, ids: list[int] | None, what: str, decoded_as_token_ids: bool = False) -> None:
    """An id the model cannot produce (at or past its ``vocab_size``) is a 400: vLLM drops it
    from the text yet counts it in usage. Ids are checked before anything is decoded.

    ``decoded_as_token_ids``: the ids were decoded as ``TokenId``, so msgspec already refused a
    negative one and only the largest needs a look (a ``min`` pass is a tenth of a short request).
    """
    if not ids:
        return
    limit = model.engine_vocab_size
    top = max(ids)
    if top >= limit or (not decoded_as_token_ids and min(ids) < 0):
        bad = top if top >= limit else min(ids)
        raise bad_request(f"Token id {bad} in {what} is out of vocabulary (vocab_size={limit}).")


def check_prompt_ids(model: ModelContext, prompt_ids: list[int] | None, decoded_as_token_ids: bool = False) -> None:
    if prompt_ids is not None and len(prompt_ids) > model.max_model_len:
        raise bad_request(
            f"prompt_token_ids length ({len(prompt_ids)}) exceeds max_model_len ({model.max_model_len})."
        )
    check_vocab(model, prompt_ids, "prompt_token_ids", decoded_as_token_ids)


def decode_choice(
    model: ModelContext,
    choice: GenerateChoice,
    request: Any,
    prompt_ids: list[int] | None,
    skip_special: bool,
) -> tuple[str, Any]:
    """The text the engine would have returned and the ``stop_reason`` (vLLM's ``_decode_output``)."""
    tok = model.tokenizer
    reported = choice.stop_reason
    ids, stop_reason = drop_stop_token(
        list(choice.token_ids or ()),
        choice.finish_reason,
        choice.stop_reason,
        request,
        tok.eos_token_id,
        model.eos_token_ids,
    )
    if choice.finish_reason != "stop" or isinstance(reported, int):
        stops: list[str] = []
    elif isinstance(reported, str):
        stops = [reported]
    else:
        stops = stop_strings(request)
    min_tokens = request.min_tokens if request is not None else 0
    detok = Detokenizer(tok, skip_special).seed(prompt_ids)
    head = detok.feed(ids[:min_tokens])
    tail = detok.feed(ids[min_tokens:])
    text = head + tail
    include = request is not None and request.include_stop_str_in_output
    match = find_stop_string(text, len(tail), stops, include)
    if match is None:
        return text, stop_reason
    stop_reason, cut = match
    return (text if cut == -1 else text[:cut]), stop_reason


def skip_special_tokens(request: Any, preserve_special: bool) -> bool:
    if preserve_special:
        return False
    return request is None or request.skip_special_tokens is not False


def finish_reason(engine_reason: str | None, tool_choice, tool_calls_made: bool) -> str:
    reason = engine_reason or "stop"
    if tool_calls_made and reason == "stop" and not isinstance(tool_choice, dict):
        return "tool_calls"
    return reason
