"""``POST /v1/chat/completions`` over the engine, answered as ``vllm serve`` answers.

Non-streamed: the engine's tokens are gathered per choice (stop strings applied as they
arrive) and handed to the one-shot chat derender, so the answer is the derender route's.
Streamed: each engine event goes through the choice's in-memory detokenizer, stop watch and
parser, and becomes one ``chat.completion.chunk`` in vLLM's framing and field set; the
events of one engine read go to the client in one write.
"""

from __future__ import annotations

import time
from typing import Any, AsyncIterator

import msgspec

from tokenbridge.derender.chat import derender_chat
from tokenbridge.derender.parsing import has_parser
from tokenbridge.gateway.choice import ChatChoice, ChoiceText
from tokenbridge.gateway.engine import EngineClient, EngineStreamError
from tokenbridge.gateway.generation import DONE, Generation
from tokenbridge.gateway.sse import Streamed, error_event
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol.completions import ChatCompletionResponse
from tokenbridge.protocol.engine import DerenderChatRequest, GenerateChoice, GenerateLogprobs, GenerateRequest, GenerateResponse
from tokenbridge.protocol.errors import ApiError

_encode = msgspec.json.Encoder().encode


def _role(req) -> str:
    if req.add_generation_prompt or not req.messages:
        return "assistant"
    last = req.messages[-1]
    return last.get("role", "assistant") if isinstance(last, dict) else "assistant"


def _echo_text(req, role: str) -> str:
    """The last message's content, echoed when it has the response's role (vLLM's ``echo``)."""
    if not req.echo or not req.messages or not isinstance(req.messages[-1], dict):
        return ""
    last = req.messages[-1]
    if last.get("role") != role:
        return ""
    content = last.get("content") or ""
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return content if isinstance(content, str) else ""


def _engine_failed(reason: str | None) -> None:
    if reason == "error":
        raise EngineStreamError("Internal server error", 500, "InternalServerError")


class Gathered:
    """A choice's tokens, logprobs and end, for the one-shot derender."""

    __slots__ = ("text", "ids", "logprobs", "finish", "stop_reason", "done", "ours")

    def __init__(self, text: ChoiceText | None) -> None:
        self.text = text
        self.ids: list[int] = []
        self.logprobs: list | None = None
        self.finish: str | None = None
        self.stop_reason: Any = None
        self.done = False
        self.ours = False  # ended by our stop string, not by the engine


async def gather(gen: Generation, cols: list[Gathered]) -> Any:
    """Read the engine until every choice ended; abort it if a stop string ended the last one."""
    kv = None
    async for batch in gen.batches():
        for chunk in batch:
            if chunk.kv_transfer_params is not None:
                kv = chunk.kv_transfer_params
            for c in chunk.choices:
                if c.index >= len(cols) or c.index < 0:
                    raise EngineStreamError(f"the engine sent choice {c.index} of {len(cols)}")
                col = cols[c.index]
                if col.done:
                    continue
                _engine_failed(c.finish_reason)
                if col.text is not None:
                    st = col.text.step(c)
                    ids, lp, finish, stop_reason, col.ours = (
                        st.token_ids, st.logprobs, st.finish_reason, st.stop_reason, st.stopped)
                else:
                    ids, lp, finish, stop_reason = list(c.token_ids or ()), c.logprobs, c.finish_reason, c.stop_reason
                col.ids += ids
                if lp is not None and lp.content is not None:
                    col.logprobs = (col.logprobs or []) + lp.content
                if finish is not None:
                    col.done, col.finish, col.stop_reason = True, finish, stop_reason
            if all(col.done for col in cols):
                if any(col.ours for col in cols):
                    await gen.abort()
                    return kv
    if not all(col.done for col in cols):
        raise EngineStreamError("the engine stream ended before every choice finished")
    return kv


async def complete(model: ModelContext, cfg, engine: EngineClient, req, gen: GenerateRequest, headers: dict) -> ChatCompletionResponse:
    prompt_ids = gen.token_ids
    n = gen.sampling_params.get("n") or 1
    stops = bool(req.stop)
    cols = [Gathered(ChoiceText(model, req, prompt_ids, has_parser(cfg)) if stops else None) for _ in range(n)]
    try:
        async with Generation(engine, gen, headers) as g:
            kv = await gather(g, cols)
    except EngineStreamError as e:
        raise e.error from None
    response = GenerateResponse(
        request_id=gen.request_id,
        choices=[
            GenerateChoice(
                index=i,
                token_ids=col.ids,
                finish_reason=col.finish,
                stop_reason=col.stop_reason,
                logprobs=GenerateLogprobs(col.logprobs) if col.logprobs is not None else None,
            )
            for i, col in enumerate(cols)
        ],
        prompt_token_ids=prompt_ids,
        kv_transfer_params=kv,
    )
    body = derender_chat(
        model,
        cfg,
        DerenderChatRequest(
            model=req.model,
            generate_response=response,
            prompt_tokens=len(prompt_ids),
            prompt_token_ids=prompt_ids,
            chat_request=req,
        ),
    )
    echo = _echo_text(req, _role(req))
    if echo:
        for c in body.choices:
            c.message.content = echo + (c.message.content or "")
    return body


async def stream(model: ModelContext, cfg, engine: EngineClient, req, gen: GenerateRequest, headers: dict) -> Streamed:
    g = Generation(engine, gen, headers)
    await g.__aenter__()  # engine refusals become this response's status
    return Streamed(_events(model, cfg, g, req, gen))


def _usage(prompt: int, completion: int, details: bool) -> dict:
    u = {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion}
    if details:
        u["completion_tokens_details"] = None
    return u


async def _events(model: ModelContext, cfg, g: Generation, req, gen: GenerateRequest) -> AsyncIterator[bytes]:
    prompt_ids = gen.token_ids
    n_prompt = len(prompt_ids)
    n = gen.sampling_params.get("n") or 1
    parsed = has_parser(cfg)
    opts = req.stream_options or {}
    include_usage = bool(opts.get("include_usage"))
    continuous = include_usage and bool(opts.get("continuous_usage_stats"))
    return_ids = bool(req.return_token_ids)
    name = req.model or model.served_names[0]
    head = b'data: {"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"choices":[' % (
        _encode(gen.request_id), int(time.time()), _encode(name))
    tail = b'],"kv_transfer_params":null}\n\n'
    out: list[bytes] = []  # this engine read's events: one write to the client
    try:
        choices = [ChatChoice(i, model, cfg, req, prompt_ids, parsed) for i in range(n)]
        done = [False] * n
        first = True
        stopped = False
        role = _role(req)
        async for batch in g.batches():
            for chunk in batch:
                if first:
                    first = False
                    usage0 = b',"usage":' + _encode(_usage(n_prompt, 0, True)) if continuous else b""
                    ids0 = _encode(prompt_ids) if return_ids else b"null"
                    for i in range(n):
                        out.append(b"%s%s]%s,\"prompt_token_ids\":%s,\"prompt_text\":null}\n\n" % (
                            head, _encode({"index": i, "delta": {"role": role, "content": ""}, "logprobs": None,
                                           "finish_reason": None}), usage0, ids0))
                    echo = _echo_text(req, role)
                    if echo:
                        for i in range(n):
                            out.append(head + _encode({"index": i, "delta": {"content": echo}, "logprobs": None,
                                                       "finish_reason": None}) + (
                                b'],"usage":' + _encode(_usage(n_prompt, 0, True)) + b"}\n\n" if continuous else b"]}\n\n"))
                for c in chunk.choices:
                    i = c.index
                    if i < 0 or i >= n:
                        raise EngineStreamError(f"the engine sent choice {i} of {n}")
                    if done[i]:
                        continue
                    _engine_failed(c.finish_reason)
                    ch = choices[i]
                    if not c.token_ids and c.finish_reason is None and not ch.text.tokens:
                        continue
                    st, delta, logprobs, reason = ch.step(model, c)
                    include_ids = return_ids and not ch.hide_metadata
                    if delta is None:
                        if reason is None and logprobs is None and not include_ids:
                            continue
                        delta = {}
                    body = {"index": i, "delta": delta, "logprobs": logprobs, "finish_reason": reason}
                    if reason is not None:
                        done[i] = True
                        body["stop_reason"] = st.stop_reason
                        body["token_ids"] = st.token_ids if include_ids else None
                        body["weight_versions"] = None
                    else:
                        body["token_ids"] = st.token_ids if include_ids else None
                    end = tail
                    if reason is not None and chunk.kv_transfer_params is not None:
                        end = b'],"kv_transfer_params":' + _encode(chunk.kv_transfer_params) + b"}\n\n"
                    if continuous:
                        end = b'],"usage":' + _encode(_usage(n_prompt, ch.text.tokens, True)) + end[1:]
                    out.append(head + _encode(body) + end)
                if all(done) and any(ch.text.stopped for ch in choices):
                    stopped = True
                    break
            if out:
                yield b"".join(out)
                out.clear()
            if stopped:
                await g.abort()  # the rest of the engine stream is for nothing
                break
        if not all(done):
            raise EngineStreamError("the engine stream ended before every choice finished")
        if include_usage:
            total = sum(ch.text.tokens for ch in choices)
            out.append(head + b'],"usage":' + _encode(_usage(n_prompt, total, False)) + b"}\n\n")
    except EngineStreamError as e:
        out.append(error_event(e.error))
    except ApiError as e:
        out.append(error_event(e))
    finally:
        await g.__aexit__(None, None, None)
    out.append(DONE)
    yield b"".join(out)
