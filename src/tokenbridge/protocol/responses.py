"""OpenAI Responses request type, as vLLM 0.33's ``/v1/responses/render`` accepts it.

Input items, tools and tool_choice stay loosely typed; the render stage interprets them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

Obj = dict[str, Any]
_INT64 = msgspec.Meta(ge=-(2**63), le=2**63 - 1)
_Penalty = Annotated[float, msgspec.Meta(ge=-2.0, le=2.0)]


class ResponsesRequest(msgspec.Struct, kw_only=True):
    input: Union[str, list[Obj]]
    instructions: str | None = None
    max_output_tokens: int | None = None
    model: str | None = None
    logit_bias: dict[str, float] | None = None
    parallel_tool_calls: bool | None = True
    previous_response_id: str | None = None
    prompt: Obj | None = None
    reasoning: Obj | None = None
    include: list[str] | None = None
    include_reasoning: bool = True
    stream: bool | None = False
    background: bool | None = False
    store: bool | None = True
    temperature: float | None = None
    text: Obj | None = None
    tool_choice: Union[str, Obj] = "auto"
    tools: list[Obj] = msgspec.field(default_factory=list)
    top_logprobs: int | None = 0
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    truncation: Literal["auto", "disabled"] | None = "disabled"
    skip_special_tokens: bool | None = None
    spaces_between_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    presence_penalty: _Penalty | None = None
    frequency_penalty: _Penalty | None = None
    repetition_penalty: float | None = None
    seed: Annotated[int, _INT64] | None = None
    stop: Union[str, list[str], None] = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    request_id: str | None = None
    priority: Annotated[int, _INT64] = 0
    cache_salt: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)] | None = None
    structured_outputs: Obj | None = None
    vllm_xargs: Obj | None = None
    kv_transfer_params: Obj | None = None
    ec_transfer_params: Obj | None = None
    chat_template_kwargs: Obj | None = None
    media_io_kwargs: Obj | None = None
    mm_processor_kwargs: Obj | None = None
    mm_payload: Literal["tensors", "none"] = "tensors"
