"""Chat derender: ``GenerateResponse`` -> ``ChatCompletionResponse`` (and streamed chunks)."""

from __future__ import annotations

import time

from tokenbridge.config import ServeConfig
from tokenbridge.derender import stream
from tokenbridge.derender.decode import (
    check_choices, check_prompt_ids, decode_choice, finish_reason, skip_special_tokens,
)
from tokenbridge.derender.logprobs import chat_logprobs, chat_top_limit
from tokenbridge.derender.parsing import build_choice_parser, has_parser
from tokenbridge.model.context import ModelContext
from tokenbridge.parsers.base import Delta
from tokenbridge.protocol.completions import ChatChoice, ChatCompletionResponse, ChatMessage, FunctionCall, ToolCall, usage
from tokenbridge.protocol.engine import DerenderChatRequest
from tokenbridge.protocol.errors import bad_request, validation_error


def accumulate(deltas: list[Delta]) -> tuple[str, str, list[dict]]:
    content = "".join(d.content for d in deltas)
    reasoning = "".join(d.reasoning for d in deltas)
    calls: dict[int, dict] = {}
    for d in deltas:
        for tc in d.tool_calls:
            c = calls.setdefault(tc.index, {"id": tc.id, "name": "", "arguments": ""})
            if c["id"] is None:
                c["id"] = tc.id
            c["name"] += tc.name or ""
            c["arguments"] += tc.arguments
    return content, reasoning, [calls[i] for i in sorted(calls)]


def handle(model: ModelContext, cfg: ServeConfig, req: DerenderChatRequest, prompt_ids_checked: bool = False):
    """``prompt_ids_checked``: a streamed chunk's prompt ids are the very list an earlier chunk
    of its stream checked against the vocabulary."""
    if req.stream:
        return stream.chat_chunk(model, cfg, req, prompt_ids_checked)
    if req.generate_response is None:
        raise validation_error("body.DerenderChatRequest.generate_response", "missing", "Field required")
    return derender_chat(model, cfg, req)


def derender_chat(model: ModelContext, cfg: ServeConfig, req: DerenderChatRequest) -> ChatCompletionResponse:
    gen = req.generate_response
    chat_req = req.chat_request
    parsed = has_parser(cfg)
    if parsed and chat_req is None:
        raise bad_request(
            "chat_request is required when a tool or reasoning parser is configured because plain "
            "detokenization would leak raw parser markup into content."
        )
    check_choices(model, cfg, gen.choices)
    own_ids = req.prompt_token_ids is not None  # typed TokenId; the engine's are plain ints
    prompt_ids = req.prompt_token_ids if own_ids else gen.prompt_token_ids
    check_prompt_ids(model, prompt_ids, decoded_as_token_ids=own_ids)
    skip_special = skip_special_tokens(chat_req, parsed)
    hide_metadata = parsed and not chat_req.include_reasoning
    return_ids = chat_req is not None and bool(chat_req.return_token_ids) and not hide_metadata
    top_limit = chat_top_limit(chat_req)
    tok = model.tokenizer
    choices = []
    for c in gen.choices:
        text, stop_reason = decode_choice(model, c, chat_req, prompt_ids, skip_special)
        lp = None
        if c.logprobs is not None and not hide_metadata:
            lp, _ = chat_logprobs(tok, c.logprobs, top_limit, [])
        message = ChatMessage(content=text)
        calls = []
        if parsed:
            # vLLM hands its parser the prompt ids of the generate response only.
            p = build_choice_parser(model, cfg, chat_req, gen.prompt_token_ids)
            fed = p.feed(text, list(c.token_ids))
            final = p.finish()
            content, reasoning, calls = accumulate([fed, final.delta])
            message.content = content or final.empty_content
            if calls:
                message.tool_calls = [
                    ToolCall(id=tc["id"], function=FunctionCall(tc["name"], tc["arguments"])) for tc in calls
                ]
            message.reasoning = reasoning or final.empty_reasoning
        tool_choice = chat_req.tool_choice if chat_req is not None else None
        choices.append(
            ChatChoice(
                index=c.index,
                message=message,
                logprobs=lp,  # vLLM shows the engine's logprobs even unasked
                finish_reason=finish_reason(c.finish_reason, tool_choice, bool(calls)),
                stop_reason=stop_reason,
                token_ids=list(c.token_ids) if return_ids else None,
            )
        )
    completion_tokens = sum(len(c.token_ids or ()) for c in gen.choices)
    prompt_tokens = req.prompt_tokens or 0
    return ChatCompletionResponse(
        id=gen.request_id,
        created=int(time.time()),
        model=req.model or model.served_names[0],
        choices=choices,
        usage=usage(prompt_tokens, completion_tokens),
        prompt_logprobs=gen.prompt_logprobs,
        prompt_token_ids=gen.prompt_token_ids if return_ids else None,
        kv_transfer_params=gen.kv_transfer_params,
        metrics=gen.metrics,
    )

