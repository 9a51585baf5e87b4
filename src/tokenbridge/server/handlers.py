"""One function per route: decode the body into its Struct, call the stage, return the body."""

from __future__ import annotations

import secrets
import time

from tokenbridge.derender import chat as chat_derender_stage
from tokenbridge.derender import completion as completion_derender_stage
from tokenbridge.protocol.engine import DerenderChatRequest, DerenderCompletionRequest
from tokenbridge.protocol.errors import ApiError, validation_error
from tokenbridge.protocol.openai import (
    ChatCompletionRequest,
    CompletionRequest,
    DetokenizeRequest,
    TokenizeRequest,
)
from tokenbridge.render.chat import render_chat, render_prompt, render_prompt_ids, template_kwargs
from tokenbridge.render.completion import render_completion
from tokenbridge.render.conversation import check_tool_call_arguments
from tokenbridge.render.harmony import is_harmony_model, render_harmony_ids


def chat_render(r):
    req = r.decode(ChatCompletionRequest)
    return render_chat(r.model, r.cfg, req, r.request_id())


def completion_render(r):
    req = r.decode(CompletionRequest)
    return render_completion(r.model, r.cfg, req, r.request_id())


def chat_derender(r):
    req = r.decode(DerenderChatRequest)
    return chat_derender_stage.handle(r.model, r.cfg, req)


def completion_derender(r):
    req = r.decode(DerenderCompletionRequest)
    return completion_derender_stage.handle(r.model, r.cfg, req)


def tokenize(r):
    req = r.decode(TokenizeRequest)
    tok = r.model.tokenizer
    if req.messages is not None:
        check_tool_call_arguments(req.messages)
        if req.add_generation_prompt and req.continue_final_message:
            raise ApiError("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
        if is_harmony_model(r.model.config):  # vLLM renders gpt-oss chats as on the chat route
            ids = render_harmony_ids(req.messages, req.tools or None, None, tok)
            return tokenize_response(r, req, ids)
        kwargs = template_kwargs(req, r.cfg, req.add_generation_prompt, req.continue_final_message)
        if hasattr(tok, "render_chat"):
            ids = render_prompt_ids(r.model, req.messages, req.tools, kwargs)
            return tokenize_response(r, req, ids)
        text = render_prompt(r.model, r.cfg, req.messages, req.tools, kwargs, req.chat_template)
        add_special = bool(req.add_special_tokens)
    elif req.prompt is not None:
        text = req.prompt
        add_special = True if req.add_special_tokens is None else req.add_special_tokens
    else:
        raise validation_error("body.prompt", "missing", "Field required")
    ids = tok.encode(text, add_special_tokens=add_special)  # /tokenize has no length limit
    return tokenize_response(r, req, ids)


def tokenize_response(r, req, ids: list[int]) -> dict:
    tok = r.model.tokenizer
    return {
        "count": len(ids),
        "max_model_len": r.model.max_model_len,
        "tokens": ids,
        "token_strs": tok.ids_to_tokens(ids) if req.return_token_strs else None,
    }


def detokenize(r):
    req = r.decode(DetokenizeRequest)
    return {"prompt": r.model.tokenizer.decode(req.tokens, skip_special_tokens=False)}


def models(r):
    now = int(time.time())
    m = r.model
    return {
        "object": "list",
        "data": [
            {
                "id": name,
                "object": "model",
                "created": now,
                "owned_by": "vllm",
                "root": m.root,
                "parent": None,
                "max_model_len": m.max_model_len,
                "permission": [
                    {
                        "id": f"modelperm-{secrets.token_hex(8)}",
                        "object": "model_permission",
                        "created": now,
                        "allow_create_engine": False,
                        "allow_sampling": True,
                        "allow_logprobs": True,
                        "allow_search_indices": False,
                        "allow_view": True,
                        "allow_fine_tuning": False,
                        "organization": "*",
                        "group": None,
                        "is_blocking": False,
                    }
                ],
            }
            for name in m.served_names
        ],
    }


def empty(r):
    return None


def not_implemented(r):
    raise ApiError("The render server does not support this API.", 501, "NotImplementedError")


def invocations(r):
    raise ApiError("Cannot find suitable handler for request. Expected one of: []", 400, "Bad Request")
