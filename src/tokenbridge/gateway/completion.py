"""``POST /v1/completions`` over the engine: one engine request per prompt, as ``vllm serve``.

Choice ``i`` of prompt ``p`` is index ``i + p * n``. Non-streamed answers come from the
one-shot completion derender; streamed ones are vLLM's ``text_completion`` chunks, the
prompts' engine streams interleaved as they deliver (every engine request is sent at once).
"""

from __future__ import annotations

import time
from contextlib import aclosing
from typing import AsyncIterator

import msgspec

from tokenbridge.derender.completion import derender_completion
from tokenbridge.gateway.chat import Gathered, gather
from tokenbridge.gateway.choice import ChoiceText, CompletionChoice
from tokenbridge.gateway.engine import EngineClient, EngineStreamError
from tokenbridge.gateway.generation import DONE, Generation, merged_batches
from tokenbridge.gateway.sse import Streamed, error_event
from tokenbridge.model.context import ModelContext
from tokenbridge.protocol.completions import CompletionResponse
from tokenbridge.protocol.engine import DerenderCompletionRequest, GenerateChoice, GenerateLogprobs, GenerateRequest, GenerateResponse
from tokenbridge.protocol.errors import ApiError
from tokenbridge.protocol.openai import completion_prompts

_encode = msgspec.json.Encoder().encode


def _prompt_texts(model: ModelContext, req, gens: list[GenerateRequest]) -> list[str]:
    """What ``echo`` repeats: each prompt as given, a token prompt decoded."""
    prompts = completion_prompts(req.prompt) or []
    out = []
    for p, gen in zip(prompts, gens):
        out.append(p if isinstance(p, str) else model.tokenizer.decode(gen.token_ids))
    return out


async def _open(engine: EngineClient, gens: list[GenerateRequest], headers: dict) -> list[Generation]:
    opened: list[Generation] = []
    try:
        for gen in gens:
            g = Generation(engine, gen, headers if len(gens) == 1 else {**headers, b"x-request-id": gen.request_id.encode()})
            await g.__aenter__()
            opened.append(g)
    except BaseException:
        for g in opened:
            await g.__aexit__(None, None, None)
        raise
    return opened


async def complete(model: ModelContext, cfg, engine: EngineClient, req, gens: list[GenerateRequest], headers: dict) -> CompletionResponse:
    n = gens[0].sampling_params.get("n") or 1
    stops = bool(req.stop)
    responses = []
    opened = await _open(engine, gens, headers)
    try:
        for g, gen in zip(opened, gens):
            cols = [Gathered(ChoiceText(model, req, gen.token_ids, False) if stops else None) for _ in range(n)]
            kv = await gather(g, cols)
            responses.append(
                GenerateResponse(
                    request_id=gen.request_id,
                    choices=[
                        GenerateChoice(index=i, token_ids=c.ids, finish_reason=c.finish, stop_reason=c.stop_reason,
                                       logprobs=GenerateLogprobs(c.logprobs) if c.logprobs is not None else None)
                        for i, c in enumerate(cols)
                    ],
                    prompt_token_ids=gen.token_ids,
                    kv_transfer_params=kv,
                )
            )
    except EngineStreamError as e:
        raise e.error from None
    finally:
        for g in opened:
            await g.__aexit__(None, None, None)
    body = derender_completion(
        model,
        cfg,
        DerenderCompletionRequest(
            model=req.model,
            generate_responses=responses,
            prompt_tokens=[len(gen.token_ids) for gen in gens],
            prompt_token_ids=[gen.token_ids for gen in gens],
            completion_request=req,
        ),
    )
    body.id = gens[0].request_id if len(gens) == 1 else gens[0].request_id.rsplit("-", 1)[0]
    if req.echo:
        texts = _prompt_texts(model, req, gens)
        for c in body.choices:
            c.text = texts[c.index // n] + c.text
    return body


async def stream(model: ModelContext, cfg, engine: EngineClient, req, gens: list[GenerateRequest], headers: dict) -> Streamed:
    opened = await _open(engine, gens, headers)
    return Streamed(_events(model, cfg, opened, req, gens))


def _usage(prompt: int, completion: int) -> bytes:
    return _encode({"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion})


class _Prompt:
    """One prompt's engine stream while it is read: its choices and what they have sent."""

    __slots__ = ("index", "gen", "ids", "choices", "sent_prompt", "done")

    def __init__(self, index: int, gen: Generation, prompt_ids: list[int], model: ModelContext, req, n: int) -> None:
        self.index = index
        self.gen = gen
        self.ids = prompt_ids
        self.choices = [CompletionChoice(i + index * n, model, req, prompt_ids) for i in range(n)]
        self.sent_prompt = [False] * n
        self.done = [False] * n


async def _events(model: ModelContext, cfg, opened: list[Generation], req, gens: list[GenerateRequest]) -> AsyncIterator[bytes]:
    n = gens[0].sampling_params.get("n") or 1
    opts = req.stream_options or {}
    include_usage = bool(opts.get("include_usage"))
    continuous = include_usage and bool(opts.get("continuous_usage_stats"))
    return_ids = bool(req.return_token_ids)
    rid = gens[0].request_id if len(gens) == 1 else gens[0].request_id.rsplit("-", 1)[0]
    head = b'data: {"id":%s,"object":"text_completion","created":%d,"model":%s,"choices":[' % (
        _encode(rid), int(time.time()), _encode(req.model or model.served_names[0]))
    texts = _prompt_texts(model, req, gens) if req.echo else None
    out: list[bytes] = []  # this engine read's events: one write to the client
    ended: set[int] = set()  # prompts whose engine stream is read no further
    try:
        prompts = [_Prompt(p, g, gen.token_ids, model, req, n) for p, (g, gen) in enumerate(zip(opened, gens))]
        async with aclosing(merged_batches(opened, ended)) as batches:
            async for p, batch in batches:
                pr = prompts[p]
                prompt_ids, choices, done, sent_prompt = pr.ids, pr.choices, pr.done, pr.sent_prompt
                for chunk in batch:
                    for c in chunk.choices:
                        i = c.index
                        if i < 0 or i >= n:
                            raise EngineStreamError(f"the engine sent choice {i} of {n}")
                        if done[i]:
                            continue
                        if c.finish_reason == "error":
                            raise EngineStreamError("Internal server error", 500, "InternalServerError")
                        ch = choices[i]
                        echo = ""
                        if texts is not None and not sent_prompt[i]:
                            echo = "" if return_ids else texts[p]
                        elif not c.token_ids and c.finish_reason is None and not ch.text.tokens:
                            continue
                        st, logprobs = ch.step(model, c, len(echo))
                        show_prompt = not sent_prompt[i] and (texts is not None or return_ids)
                        sent_prompt[i] = sent_prompt[i] or show_prompt
                        done[i] = st.finish_reason is not None
                        body = {
                            "index": ch.index,
                            "text": echo + st.text,
                            "logprobs": logprobs,
                            "finish_reason": st.finish_reason,
                            "stop_reason": st.stop_reason,
                            "prompt_token_ids": prompt_ids if show_prompt else None,
                            "token_ids": st.token_ids if return_ids else None,
                            "weight_versions": None,
                        }
                        kv = chunk.kv_transfer_params if done[i] else None
                        usage = b',"usage":' + _usage(len(prompt_ids), ch.text.tokens) if continuous else b""
                        out.append(b"%s%s]%s,\"kv_transfer_params\":%s}\n\n" % (head, _encode(body), usage, _encode(kv)))
                    if all(done) and any(ch.text.stopped for ch in choices):
                        ended.add(p)
                        break
                if out:
                    yield b"".join(out)
                    out.clear()
                if p in ended:
                    await pr.gen.abort()  # the rest of this engine stream is for nothing
        if not all(all(pr.done) for pr in prompts):
            raise EngineStreamError("the engine stream ended before every choice finished")
        if include_usage:
            total_prompt = sum(len(pr.ids) for pr in prompts)
            total_completion = sum(ch.text.tokens for pr in prompts for ch in pr.choices)
            out.append(head + b'],"usage":' + _usage(total_prompt, total_completion) + b"}\n\n")
    except EngineStreamError as e:
        out.append(error_event(e.error))
    except ApiError as e:
        out.append(error_event(e))
    finally:
        for g in opened:
            await g.__aexit__(None, None, None)
    out.append(DONE)
    yield b"".join(out)
