"""One function per route: decode the body into its Struct, call the stage, return the body."""

from __future__ import annotations

import secrets
import time

import msgspec

from tokenbridge.derender import chat as chat_derender_stage
from tokenbridge.derender import completion as completion_derender_stage
from tokenbridge.gateway import chat as chat_gateway
from tokenbridge.gateway import completion as completion_gateway
from tokenbridge.protocol import anthropic as anthropic_protocol
from tokenbridge.protocol import early, lax
from tokenbridge.protocol.engine import DerenderChatRequest, DerenderCompletionRequest, GenerateResponse
from tokenbridge.protocol.errors import ApiError, bad_request, validation_error
from tokenbridge.protocol.openai import (
    ChatCompletionRequest,
    CompletionRequest,
    DetokenizeRequest,
    completion_prompts,
    TokenizeRequest,
)
from tokenbridge.protocol.responses import ResponsesRequest
from tokenbridge.protocol.responses import check_shapes as check_response_shapes
from tokenbridge.render.anthropic import render_messages
from tokenbridge.render.chat import (
    chat_prompt_ids,
    random_id,
    render_chat,
    render_known_chat,
    render_prompt_ids,
    renders_purely,
    template_kwargs,
)
from tokenbridge.render.chat_plans import chat_shapes
from tokenbridge.render.completion import render_completion
from tokenbridge.render.conversation import check_tool_call_arguments
from tokenbridge.render.harmony import is_harmony_model, render_harmony_ids
from tokenbridge.render.responses import render_responses
from tokenbridge.server.stream_requests import REPEATED, KnownChunk, stream_requests


def chat_render(r):
    known = chat_shapes.look_up(r.body, r.model, r.cfg)
    if known is not None and known.conversation is not None:
        shape, conversation = known.shape, known.conversation
        try:
            return _render_marked(r, shape.req, shape.pure,
                                  lambda rid: render_known_chat(r.model, r.cfg, shape, conversation, rid))
        except Exception:
            pass  # the full render answers it, or fails on it, as it would have anyway
    obj = check_chat_body(r.json())
    req = r.decode(ChatCompletionRequest, obj, check_chat_request)
    check_mm_kwargs(obj)
    key = known.key if known is not None and known.shape is None else None  # a shape is kept once
    return _render_marked(r, req, None, lambda rid: render_chat(r.model, r.cfg, req, rid, shape_key=key))


def _render_marked(r, req: ChatCompletionRequest, pure: bool | None, render):
    """``render(request_id)``, the id drawn here when neither the header nor the body gives
    one; its answer is marked as kept (``r.fresh_id``) when the prompt memo found the
    conversation (a repeat) and only the body and that id decide it. ``pure``:
    ``renders_purely`` of ``req`` when known."""
    rid = r.request_id()
    if rid or req.request_id:
        return render(rid)
    rid = random_id()
    memo_hits = r.model.prompt_memo.hits
    gen = render(rid)
    if r.model.prompt_memo.hits != memo_hits and (pure if pure is not None else renders_purely(r.model, r.cfg, req)):
        r.fresh_id = rid  # server/answer_memo.py
    return gen


def messages_render(r):
    obj = r.json()
    if isinstance(obj, dict):
        early.check_vllm_xargs(obj)
    try:  # the schema's validators run before the model is looked up
        req = r.decode(anthropic_protocol.MessagesRequest, obj, anthropic_protocol.validate)
    except ApiError as e:
        raise anthropic_protocol.tag_thinking_loc(e, r.body) from None
    return render_messages(r.model, r.cfg, req, r.request_id())


def responses_render(r):
    # vLLM ignores X-Request-Id here: the id is the body's request_id or a fresh resp_ one.
    obj = r.json()
    check_response_shapes(obj)
    if isinstance(obj, dict):
        early.check_vllm_xargs(obj)
    req = r.decode(ResponsesRequest, obj)
    if not is_harmony_model(r.model.config):  # vLLM's Harmony path skips its chat preprocessing
        check_mm_kwargs(obj)
    return render_responses(r.model, r.cfg, req)


def check_chat_body(obj):
    """vLLM's chat before-validators, then the ``messages`` union and the raising fields."""
    return early.check_chat(obj, check_chat_fields)


def check_chat_request(req: ChatCompletionRequest) -> None:
    """The chat schema's after-validator: its assistant tool calls, materialized and checked
    (the content parts are read, and checked, when the chat is rendered)."""
    check_tool_call_arguments(req.messages, parts=False)


def check_chat_fields(obj: dict, parts: bool = True) -> None:
    early.check_sampling_fields(obj)
    check_messages(obj, parts)


def check_mm_kwargs(obj: dict) -> None:
    """vLLM's preprocessing refuses per-request multimodal kwargs (no --trust-request-mm-kwargs);
    it reads them with ``getattr``, so undeclared (extra) keys count too."""
    for name, what in (("mm_processor_kwargs", "preprocessing"), ("media_io_kwargs", "media loading")):
        if obj.get(name):
            raise bad_request(
                f"Per-request {name} are disabled by default because they can change multimodal "
                f"{what} resource usage. Start the server with --trust-request-mm-kwargs only when "
                "clients are trusted.",
                name,
            )


def check_messages(obj: dict, parts: bool = True) -> None:
    """``messages`` is iterated before validation (a TypeError there is a 400 BadRequestError),
    then ``tools`` and each message must fit vLLM's types. A dict ``content`` is an iterable
    of parts (its keys) to pydantic; the parts are only looked at when rendering (``parts``)."""
    early.check_tool_definitions(obj)
    messages = obj.get("messages")
    if not isinstance(messages, list):
        return
    for i, m in enumerate(messages):
        loc = f"body.messages.{i}"
        if not isinstance(m, dict):
            raise validation_error(loc, "dict_type", "Input should be a valid dictionary")
        if not isinstance(m.get("role"), str):
            raise validation_error(f"{loc}.role", "string_type", "Input should be a valid string")
        content = m.get("content")
        iterable = (str, list) if m["role"] == "tool" else (str, list, dict)  # a tool's content is a list
        if "content" in m and not isinstance(content, iterable) and content is not None:
            raise validation_error(f"{loc}.content", "string_type", "Input should be a valid string")
        if content is None and "content" in m and m["role"] not in ("assistant", "function"):
            raise validation_error(f"{loc}.content", "string_type", "Input should be a valid string")
        if content is None and "content" in m and "tool_calls" in m and m["tool_calls"] is None:
            # null content needs the assistant schema, whose tool_calls cannot be null
            raise validation_error(f"{loc}.tool_calls", "iterable_type", "Input should be iterable")
        if parts and isinstance(content, (list, dict)):
            for part in content:
                if not isinstance(part, (dict, str)):
                    raise ApiError("Input should be a valid dictionary")
                if isinstance(part, dict) and part.get("type", "text") == "text" and not isinstance(
                    part.get("text", ""), str
                ):
                    raise ApiError("Input should be a valid string")
        if "name" in m and not isinstance(m["name"], str):
            raise validation_error(f"{loc}.name", "string_type", "Input should be a valid string")


def check_completion_body(obj):
    """vLLM's completion before-validators, then the ``prompt`` union and the raising fields."""
    return early.check_completion(obj, check_completion_fields)


def check_completion_fields(obj: dict) -> None:
    early.check_sampling_fields(obj)
    completion_prompts(obj.get("prompt"))
    embeds = obj.get("prompt_embeds")
    if embeds is not None and not (_is_bytes(embeds) or isinstance(embeds, list) and all(map(_is_bytes, embeds))):
        raise validation_error("body.prompt_embeds", "bytes_type", "Input should be a valid bytes")


def _is_bytes(v) -> bool:
    """pydantic's lax ``bytes``: a string that encodes as UTF-8."""
    if not isinstance(v, str):
        return False
    try:
        v.encode()
    except UnicodeEncodeError:
        return False
    return True


def completion_render(r):
    obj = check_completion_body(r.json())
    req = r.decode(CompletionRequest, obj)
    if req.prompt_embeds is not None and req.prompt_embeds != []:
        raise bad_request("You must set `--enable-prompt-embeds` to input `prompt_embeds`.", "prompt_embeds")
    check_mm_kwargs(obj)
    return render_completion(r.model, r.cfg, req, r.request_id())


def chat_completions(r):
    """Render here (on a thread for a large body); the engine part is the coroutine returned."""
    obj = check_chat_body(r.json())
    req = r.decode(ChatCompletionRequest, obj, check_chat_request)
    check_mm_kwargs(obj)
    gen = render_chat(r.model, r.cfg, req, r.request_id())
    answer = chat_gateway.stream if req.stream else chat_gateway.complete
    return answer(r.model, r.cfg, r.engine, req, gen, r.headers)


def completions(r):
    obj = check_completion_body(r.json())
    req = r.decode(CompletionRequest, obj)
    if req.prompt_embeds is not None and req.prompt_embeds != []:
        raise bad_request("You must set `--enable-prompt-embeds` to input `prompt_embeds`.", "prompt_embeds")
    check_mm_kwargs(obj)
    gens = render_completion(r.model, r.cfg, req, r.request_id())
    answer = completion_gateway.stream if req.stream else completion_gateway.complete
    return answer(r.model, r.cfg, r.engine, req, gens, r.headers)


def derender_body(obj, oneshot_key: str):
    """vLLM's derender body is a union of a one-shot and a streaming model, each ignoring the
    other's keys: drop those the chosen variant (``stream`` false or true) would not read."""
    if not isinstance(obj, dict):
        return obj
    stream = obj.get("stream", False)
    if stream is True:
        drop = (oneshot_key,)
    elif stream is False:
        drop = ("generate_chunk", "stream_state")
    else:
        return obj
    return {k: v for k, v in obj.items() if k not in drop}


# Derender bodies from this size on are read as ``lax.decode_view`` reads them: a long engine
# output straight into structs, a streamed chunk's repeated fields not at all when kept. A smaller
# body that names no ``stream`` (a one-shot one: ``stream`` defaults to false) is decoded whole,
# ~3 us cheaper; a smaller stream chunk saves ~9 us of its ~57 by the view.
VIEW_FROM_BYTES = 4 * 1024


def derender_view(r, typ, key: str, output_typ, request_field: str):
    """``(body, chunk)``: a derender body read in one pass (``lax.decode_view``) and the streamed
    chunk it is as ``stream_requests`` knows it (None: not one); None when the body is better
    decoded whole. A body is read so when it has ``VIEW_FROM_BYTES`` or more, or names
    ``stream``: its engine output at ``key`` straight into ``output_typ``, and a streamed chunk's
    repeated fields left out when an earlier chunk's are kept."""
    if len(r.body) < VIEW_FROM_BYTES and b'"stream"' not in r.body:
        return None
    names = REPEATED[request_field]
    obj = lax.decode_view(r.body, typ, key, output_typ, names)
    if obj is None:
        return None
    known = stream_requests.look_up(obj, request_field, r.model, r.cfg)
    kept = known is not None and known.kept
    for name in names:
        if name not in obj:
            continue
        if kept:
            del obj[name]
            continue
        try:
            obj[name] = msgspec.json.decode(obj[name])
        except (msgspec.DecodeError, RecursionError):
            return None
    return obj, known


def _derender_request(r, typ, key: str, output_typ, request_field: str, check_request, after=None):
    """A derender body decoded into ``typ`` with vLLM's checks of its request (``check_request``
    on the dict, then ``after`` on the struct), or, for a streamed chunk whose repeated fields
    an earlier chunk had, with what those fields made then. Returns the struct and the chunk as
    ``stream_requests`` knows it (None: not a streamed chunk worth keeping).

    A body read in one pass that fails is decoded again whole, so its error reads as it always
    did: the view lists fields in the struct's order, and the first error found follows the
    body's."""
    viewed = derender_view(r, typ, key, output_typ, request_field)
    if viewed is not None:
        try:
            return _checked(r, typ, key, *viewed, request_field, check_request, after)
        except ApiError:
            pass
    return _checked(r, typ, key, r.json(), None, request_field, check_request, after)


def _checked(r, typ, key: str, obj, known: KnownChunk | None, request_field: str, check_request, after):
    obj = derender_body(obj, key)
    if known is not None and known.kept:
        req = r.decode(typ, obj)
        for name, value in zip(known.names, known.values):
            setattr(req, name, value)
        return req, known
    if isinstance(obj, dict):
        check_request(obj.get(request_field))
    return r.decode(typ, obj, after), known


def _keep(known: KnownChunk | None, r, req) -> None:
    """After a streamed chunk is answered: keep what its repeated fields made, if not kept."""
    if known is not None and not known.kept:
        stream_requests.put(known, r.model, r.cfg, tuple(getattr(req, name) for name in known.names))


def chat_derender(r):
    req, known = _derender_request(r, DerenderChatRequest, "generate_response", GenerateResponse, "chat_request",
                                   lambda body: early.check_chat(body, lambda b: check_chat_fields(b, parts=False)),
                                   check_derender_chat_request)
    r.tokens = engine_tokens([req.generate_response] if req.generate_chunk is None else [req.generate_chunk])
    answer = chat_derender_stage.handle(r.model, r.cfg, req, prompt_ids_checked=known is not None and known.kept)
    _keep(known, r, req)
    return answer


def check_derender_chat_request(req: DerenderChatRequest) -> None:
    """The ``chat_request``'s assistant tool calls, as its schema's after-validator checks them."""
    if req.chat_request is not None and isinstance(req.chat_request.messages, list):
        check_tool_call_arguments(req.chat_request.messages, parts=False)


def completion_derender(r):
    req, known = _derender_request(r, DerenderCompletionRequest, "generate_responses", list[GenerateResponse],
                                   "completion_request", check_completion_body)
    r.tokens = engine_tokens(req.generate_responses or [] if req.generate_chunk is None else [req.generate_chunk])
    answer = completion_derender_stage.handle(r.model, r.cfg, req)
    _keep(known, r, req)
    return answer


def engine_tokens(responses) -> int:
    """Token ids the engine sent in these responses or chunks (for the metrics)."""
    return sum(len(c.token_ids or ()) for g in responses if g is not None for c in (g.choices or ()))


_TOKENIZE_COMPLETION_KEYS = ("model", "prompt", "add_special_tokens", "return_token_strs")


def tokenize_request(r, obj) -> TokenizeRequest:
    """vLLM's ``TokenizeCompletionRequest | TokenizeChatRequest`` smart union: the chat form when
    ``messages`` validates, else the completion form (which ignores chat keys) when it does."""
    if not isinstance(obj, dict):
        return r.decode(TokenizeRequest, obj)
    completion = {k: obj[k] for k in _TOKENIZE_COMPLETION_KEYS if k in obj}
    if "messages" not in obj:
        return r.decode(TokenizeRequest, completion)
    early.check_generation_prompt(obj)
    try:
        check_messages(obj)
        return r.decode(TokenizeRequest, obj)
    except ApiError as e:
        if e.type != "Bad Request" or "prompt" not in obj:
            raise
        try:
            return r.decode(TokenizeRequest, completion)
        except ApiError:
            raise e from None


def tokenize(r):
    obj = r.json()
    req = tokenize_request(r, obj)
    check_mm_kwargs(obj)
    tok = r.model.tokenizer
    if req.messages is not None:
        for i, m in enumerate(req.messages):  # not iterable: the request fits no tokenize schema
            calls = m.get("tool_calls") if isinstance(m, dict) else None
            if calls is not None and not isinstance(calls, (list, str, dict)):
                raise validation_error(f"body.messages.{i}.tool_calls", "list_type", "Input should be a valid list")
        try:
            check_tool_call_arguments(req.messages)
        except ApiError as e:  # here vLLM validates inside the handler: a BadRequestError
            raise ApiError(e.message) from None
        if req.add_generation_prompt and req.continue_final_message:
            raise ApiError("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
        if is_harmony_model(r.model.config):  # vLLM renders gpt-oss chats as on the chat route
            ids = render_harmony_ids(req.messages, req.tools or None, None, tok)
            return tokenize_response(r, req, ids)
        kwargs = template_kwargs(req, r.cfg, req.add_generation_prompt, req.continue_final_message)
        if hasattr(tok, "render_chat"):
            if any(_lazy_tool_calls(m) for m in req.messages):
                # vLLM's /tokenize hands mistral-common the still-lazy tool_calls here
                raise ApiError(
                    "tool_calls must be a list, got <class 'pydantic_core._pydantic_core.ValidatorIterator'>"
                )
            ids = render_prompt_ids(r.model, req.messages, req.tools, kwargs)
            return tokenize_response(r, req, ids)
        ids = chat_prompt_ids(
            r.model, r.cfg, req.messages, req.tools, kwargs, req.chat_template, None,
            bool(req.add_special_tokens), None, check_length=False,
        )
        return tokenize_response(r, req, ids)
    if req.prompt is not None:
        text = req.prompt
        add_special = True if req.add_special_tokens is None else req.add_special_tokens
    else:
        raise validation_error("body.prompt", "missing", "Field required")
    ids = tok.encode(text, add_special_tokens=add_special)  # /tokenize has no length limit
    return tokenize_response(r, req, ids)


def _lazy_tool_calls(m) -> bool:
    """An assistant message whose ``tool_calls`` vLLM's mistral /tokenize path leaves
    unconverted: an empty list, or calls beside an explicit null content."""
    if not isinstance(m, dict) or m.get("role") != "assistant" or m.get("tool_calls") is None:
        return False
    return m["tool_calls"] == [] or ("content" in m and m["content"] is None)


def tokenize_response(r, req, ids: list[int]) -> dict:
    tok = r.model.tokenizer
    return {
        "count": len(ids),
        "max_model_len": r.model.max_model_len,
        "tokens": ids,
        "token_strs": tok.ids_to_tokens(ids) if req.return_token_strs else None,
    }


_INT64_MAX = 2**63 - 1
_UINT32_MAX = 2**32 - 1


def detokenize(r):
    req = r.decode(DetokenizeRequest)
    for i, t in enumerate(req.tokens):  # vLLM's schema caps ids at int64
        if t > _INT64_MAX:
            raise validation_error(f"body.tokens.{i}", "less_than_equal", f"Input should be less than or equal to {_INT64_MAX}")
    tok = r.model.tokenizer
    undecodable = getattr(tok, "undecodable", None)
    if undecodable is not None:  # mistral mode: vLLM's decoder raises past the vocabulary (its 500; our 400)
        message = undecodable(req.tokens)
        if message is not None:
            raise ApiError(message)
    elif any(t > _UINT32_MAX for t in req.tokens):  # tokenizers takes uint32 ids
        raise ApiError("number too large to fit in target type")
    return {"prompt": tok.decode(req.tokens, skip_special_tokens=False)}


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
