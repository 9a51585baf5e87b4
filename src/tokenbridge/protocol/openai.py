"""OpenAI-compatible request types, as vLLM 0.33 accepts them (unknown keys are ignored).

Loosely typed fields (``Any``) are those where vLLM accepts several shapes and decides later;
the render stage validates them with vLLM's messages.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

import msgspec

from tokenbridge.protocol.errors import validation_error

Obj = dict[str, Any]


class _Sampling(msgspec.Struct, kw_only=True):
    """Fields shared by chat and completion requests."""

    model: str | None = None
    n: int | None = 1
    seed: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: float | None = None
    max_tokens: int | None = None
    stop: Union[str, list[str], None] = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    min_tokens: int = 0
    logit_bias: dict[str, float] | None = None
    allowed_token_ids: list[int] | None = None
    bad_words: list[str] | None = None
    skip_special_tokens: bool | None = None
    spaces_between_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    prompt_logprobs: int | None = None
    logprob_token_ids: list[int] | None = None
    response_format: Obj | None = None
    structured_outputs: Obj | None = None
    repetition_detection: Any = None
    thinking_token_budget: int | None = None
    use_beam_search: bool = False
    stream: bool | None = False
    stream_options: Obj | None = None
    echo: bool | None = False
    add_special_tokens: bool | None = None
    truncate_prompt_tokens: int | None = None
    request_id: str | None = None
    cache_salt: str | None = None
    priority: int = 0
    kv_transfer_params: Obj | None = None
    ec_transfer_params: Obj | None = None
    vllm_xargs: Obj | None = None
    return_token_ids: bool | None = None
    return_token_offsets: bool | None = False
    length_penalty: float = 1.0
    user: str | None = None
    watermarking: bool | None = None  # the engine's configured watermark, per request


class ChatCompletionRequest(_Sampling, kw_only=True):
    messages: list[Obj]
    tools: list[Obj] | None = None
    tool_choice: Union[str, Obj, None] = None
    parallel_tool_calls: bool | None = True
    include_reasoning: bool = True
    reasoning_effort: str | None = None
    max_completion_tokens: int | None = None
    logprobs: bool | None = False
    top_logprobs: int | None = 0
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    chat_template: str | None = None
    chat_template_kwargs: Obj | None = None
    documents: list[Obj] | None = None
    media_io_kwargs: dict[str, Obj] | None = None
    mm_processor_kwargs: Obj | None = None


class CompletionRequest(_Sampling, kw_only=True):
    # str | list[str] | list[int] | list[list[int]]: msgspec cannot express a union of list
    # types, so ``completion_prompts`` checks the shape with pydantic's error locations.
    prompt: Any = None
    max_tokens: int | None = 16  # the OpenAI completions default, unlike chat
    prompt_embeds: Any = None
    logprobs: int | None = None
    suffix: str | None = None


class TokenizeRequest(msgspec.Struct, kw_only=True):
    """Both /tokenize shapes: ``prompt`` (completion form) or ``messages`` (chat form)."""

    model: str | None = None
    prompt: str | None = None
    messages: list[Obj] | None = None
    tools: list[Obj] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    add_special_tokens: bool | None = None
    return_token_strs: bool | None = False
    chat_template: str | None = None
    chat_template_kwargs: Obj | None = None
    media_io_kwargs: dict[str, Obj] | None = None
    mm_processor_kwargs: Obj | None = None


class DetokenizeRequest(msgspec.Struct, kw_only=True):
    model: str | None = None
    tokens: list[Annotated[int, msgspec.Meta(ge=0)]]


def _is_token_id(x: Any) -> bool:
    return type(x) is int and x >= 0


def _is_token_ids(x: Any) -> bool:
    return isinstance(x, list) and all(_is_token_id(i) for i in x)


def completion_prompts(prompt: Any) -> list[str | list[int]] | None:
    """The prompts of a completion request, one per engine request; None when absent.

    The shape check is vLLM's ``list[int] | list[list[int]] | str | list[str]`` union; a
    mismatch is reported at the location pydantic names first (its ``list[int]`` branch).
    """
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list):
        if _is_token_ids(prompt):
            return [prompt] if prompt else []
        if all(_is_token_ids(p) for p in prompt) or all(isinstance(p, str) for p in prompt):
            return list(prompt)
        bad = next(i for i, p in enumerate(prompt) if not _is_token_id(p))
        item = prompt[bad]
        if type(item) is int:
            raise validation_error(
                f"body.prompt.{bad}", "greater_than_equal", "Input should be greater than or equal to 0"
            )
        raise validation_error(f"body.prompt.{bad}", "int_type", "Input should be a valid integer")
    raise validation_error("body.prompt", "list_type", "Input should be a valid list")
