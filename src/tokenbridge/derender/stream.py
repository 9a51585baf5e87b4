"""Streaming derender: one engine chunk in, one OpenAI chunk and the next ``stream_state`` out.

The same detokenizer and the same ``ChoiceParser`` as the one-shot path carry a choice from
call to call through ``state.StreamState``, so a stream accumulates to the one-shot answer
however the engine chunked it, and a call costs the same at token 10 and at token 8,000.
A chunk holds at most one choice; for n>1 the client keeps one state per choice index.
"""

from __future__ import annotations

import time
from typing import Any

from tokenbridge.config import ServeConfig
from tokenbridge.derender import state as codec
from tokenbridge.derender.decode import check_choice_bounds, check_prompt_ids, check_vocab, skip_special_tokens
from tokenbridge.derender.decode import finish_reason as chat_finish_reason
from tokenbridge.derender.detokenizer import Detokenizer
from tokenbridge.derender.logprobs import (
    CONTEXT_WINDOW,
    chat_logprobs,
    chat_top_limit,
    completion_logprobs,
    completion_top_limit,
)
from tokenbridge.derender.parsing import ChoiceParser, build_choice_parser, has_parser
from tokenbridge.derender.state import StreamState, VllmStreamState
from tokenbridge.derender.stops import drop_stop_token
from tokenbridge.model.context import ModelContext
from tokenbridge.parsers.base import Delta, ToolCallDelta, merge_deltas
from tokenbridge.protocol import lax
from tokenbridge.protocol.completions import (
    ChatChunkChoice, ChatCompletionChunk, ChatDelta, CompletionChunk, CompletionChunkChoice, FunctionDelta, ToolCallChunk,
    Usage, usage,
)
from tokenbridge.protocol.engine import (
    DerenderChatRequest,
    DerenderCompletionRequest,
    GenerateChunk,
    GenerateChunkChoice,
)
from tokenbridge.protocol.errors import ApiError, bad_request, validation_error

STOP_STRINGS_ERROR = (
    "stop strings are not supported by streaming derender because text already sent cannot be "
    "cut. Use non-streaming derender or output_mode=text on /inference/v1/generate which holds "
    "stop strings back."
)
_CHAT_LOC = "body.DerenderChatStreamRequest"
_COMPLETION_LOC = "body.DerenderCompletionStreamRequest"


def _state_error(detail: str) -> ApiError:
    return bad_request(f"invalid stream_state: {detail}")


def _require_chunk(chunk: GenerateChunk | None, loc: str) -> GenerateChunk:
    if chunk is None:
        raise validation_error(f"{loc}.generate_chunk", "missing", "Field required")
    return chunk


def _one_choice(chunk: GenerateChunk, endpoint: str) -> GenerateChunkChoice | None:
    if len(chunk.choices) > 1:
        raise bad_request(f"{endpoint} expects at most one choice per chunk (got {len(chunk.choices)}).")
    return chunk.choices[0] if chunk.choices else None


def _delta_len(choice: GenerateChunkChoice | None) -> int:
    return len(choice.token_ids or ()) if choice is not None else 0


def _prior_len(loaded: StreamState | VllmStreamState | None) -> int:
    if isinstance(loaded, StreamState):
        return loaded.output_tokens
    if isinstance(loaded, VllmStreamState):
        return len(loaded.output_token_ids)
    return 0


def _check_length(model: ModelContext, prompt_ids: list[int] | None, prior: int, delta: int) -> None:
    prompt_len = len(prompt_ids) if prompt_ids is not None else 0
    if prompt_len + prior + delta > model.max_model_len:
        raise bad_request(
            f"prompt_token_ids length ({prompt_len}) plus output_token_ids length ({prior}) plus "
            f"delta ({delta}) exceeds max_model_len ({model.max_model_len})."
        )


def _check_prior_ids(model: ModelContext, loaded: StreamState | VllmStreamState | None) -> None:
    """A vLLM-shaped state carries the output so far: its ids must be the model's too."""
    if isinstance(loaded, VllmStreamState):
        check_vocab(model, loaded.output_token_ids, "stream_state.output_token_ids")


def _check_position(state: StreamState, choice: GenerateChunkChoice) -> None:
    """A verified state must still fit the chunk: the same choice, a stream not yet finished."""
    if state.choice_index >= 0 and choice.index != state.choice_index:
        raise _state_error(f"it belongs to choice {state.choice_index}, not {choice.index}")
    if state.finished and (choice.token_ids or choice.finish_reason is not None):
        raise _state_error("the stream already finished")


def _usage(chunk: GenerateChunk, prompt_tokens: int | None) -> Usage | None:
    u = chunk.usage
    if u is None:
        return None
    return usage(prompt_tokens if prompt_tokens is not None else (u.prompt_tokens or 0), u.completion_tokens or 0)


def _chunk_fields(model: ModelContext, req: DerenderChatRequest | DerenderCompletionRequest,
                  chunk: GenerateChunk) -> dict[str, Any]:
    """What a streamed chunk of either endpoint takes from the engine chunk and the request."""
    return {
        "id": chunk.request_id,
        "created": int(time.time()),
        "model": req.model or model.served_names[0],
        "usage": _usage(chunk, req.prompt_tokens),
        "metrics": chunk.metrics,
    }


def _logprob_context(context: list[int], delta_ids: list[int]) -> list[int]:
    return (list(context) + list(delta_ids))[-CONTEXT_WINDOW:]


def _pin_tool_call_ids(calls: list[ToolCallDelta], issued: list[str]) -> None:
    """Keep the id first issued for an index (a resumed vLLM stream already sent some)."""
    for tc in calls:
        if tc.id is None:
            continue
        if tc.index < len(issued):
            tc.id = issued[tc.index]
        else:
            issued.append(tc.id)


def tool_call_entries(tc: ToolCallDelta, split: bool) -> list[ToolCallChunk]:
    """A call opens with an entry of its id, type and name. With ``split`` (incremental
    streaming, as vLLM's streaming parsers send it) arguments that came with the name follow in
    an entry of their own; a whole call is one entry."""
    if not split:
        opening = tc.id is not None
        return [ToolCallChunk(id=tc.id, type="function" if opening else None, index=tc.index,
                              function=FunctionDelta(tc.name, tc.arguments or None))]
    entries = []
    if tc.id is not None:
        entries.append(ToolCallChunk(id=tc.id, type="function", index=tc.index, function=FunctionDelta(tc.name, None)))
    if tc.arguments or not entries:
        entries.append(ToolCallChunk(id=None, type=None, index=tc.index,
                                     function=FunctionDelta(None if entries else tc.name, tc.arguments or None)))
    return entries


# ---------------------------------------------------------------------------------------- chat


def chat_chunk(model: ModelContext, cfg: ServeConfig, req: DerenderChatRequest,
               prompt_ids_checked: bool = False) -> dict:
    chunk = _require_chunk(req.generate_chunk, _CHAT_LOC)
    loaded = codec.load(model, cfg, req.stream_state, codec.CHAT, f"{_CHAT_LOC}.stream_state")
    chat_req = req.chat_request
    parsed = has_parser(cfg)
    if chat_req is not None and chat_req.stop:
        raise bad_request(STOP_STRINGS_ERROR)
    if parsed and chat_req is None:
        raise bad_request(
            "chat_request is required when a tool or reasoning parser is configured because plain "
            "detokenization would leak raw parser markup into content."
        )
    if parsed and req.prompt_token_ids is None:
        raise bad_request(
            "prompt_token_ids is required when a tool or reasoning parser is configured. Without it "
            "parse_delta cannot tell whether the prompt left reasoning open (e.g. a chat template "
            "that pre-opens <think>) and would misclassify reasoning content as plain content."
        )
    choice = _one_choice(chunk, "derender_chat_stream")
    _check_length(model, req.prompt_token_ids, _prior_len(loaded), _delta_len(choice))
    if not prompt_ids_checked:
        check_vocab(model, req.prompt_token_ids, "prompt_token_ids", decoded_as_token_ids=True)
    _check_prior_ids(model, loaded)
    if choice is not None:
        check_choice_bounds(model, cfg, choice)

    stream = _ChatStream.open(model, cfg, req, loaded, parsed)
    choices = [stream.step(choice)] if choice is not None else []
    return_ids = chat_req is not None and bool(chat_req.return_token_ids)
    body = ChatCompletionChunk(
        choices=choices,
        prompt_token_ids=chunk.prompt_token_ids if return_ids else None,
        **_chunk_fields(model, req, chunk),
    )
    return {"chunk": body, "stream_state": codec.encode(model, cfg, stream.save())}


class _ChatStream:
    """One chat choice between two calls: the restored detokenizer, parser and counters."""

    __slots__ = ("model", "req", "state", "detok", "parser")

    def __init__(self, model: ModelContext, req: DerenderChatRequest, state: StreamState,
                 detok: Detokenizer, parser: ChoiceParser | None) -> None:
        self.model = model
        self.req = req
        self.state = state
        self.detok = detok
        self.parser = parser

    @classmethod
    def open(cls, model: ModelContext, cfg: ServeConfig, req: DerenderChatRequest,
             loaded: StreamState | VllmStreamState | None, parsed: bool) -> "_ChatStream":
        chat_req = req.chat_request
        detok = Detokenizer(model.tokenizer, skip_special_tokens(chat_req, parsed))
        # The engine's prompt ids, as the one-shot answer's parser gets them (vLLM's stream reads
        # the request's instead, and then disagrees with its own answer where the prompt ended
        # the reasoning): a stream adds up to the one-shot answer.
        engine_prompt = req.generate_chunk.prompt_token_ids if req.generate_chunk is not None else None
        parser = build_choice_parser(model, cfg, chat_req, engine_prompt, streaming=True) if parsed else None
        if isinstance(loaded, StreamState):
            if loaded.parsed != parsed:
                raise _state_error("it was made without the parser configuration of this server")
            try:
                detok.restore(loaded.detokenizer)
                if parser is not None:
                    parser.restore(loaded.parser)
            except (ValueError, TypeError, IndexError, KeyError) as e:
                raise _state_error(str(e)) from None
            return cls(model, req, loaded, detok, parser)
        state = StreamState(codec.CHAT, parsed, [])
        if loaded is None:
            seed = req.prompt_token_ids if req.prompt_token_ids is not None else req.generate_chunk.prompt_token_ids
            detok.seed(seed)
        else:
            cls._resume_vllm(detok, parser, loaded, req.prompt_token_ids)
            state.role_sent = loaded.role_sent
            state.logprob_context = list(loaded.logprob_context_token_ids)
            state.output_tokens = len(loaded.output_token_ids)
            state.tool_call_ids = list(loaded.last_tool_call_ids)
        return cls(model, req, state, detok, parser)

    @staticmethod
    def _resume_vllm(detok: Detokenizer, parser: ChoiceParser | None, loaded: VllmStreamState,
                     prompt_ids: list[int] | None) -> None:
        """Rebuild our position by replaying vLLM's output ids, chunk by chunk, as vLLM does."""
        try:
            if parser is None:
                detok.resume(loaded.prev_tokens, loaded.prefix_offset, loaded.read_offset)
                return
            detok.seed(prompt_ids)
            ids, start = loaded.output_token_ids, 0
            for n in loaded.output_chunk_lens:
                part = ids[start : start + n]
                start += n
                parser.feed(detok.feed(part), part)
            parser.calls = parser.calls or loaded.tools_streamed
        except Exception:
            raise _state_error("derender failed") from None

    def save(self) -> StreamState:
        self.state.detokenizer = self.detok.snapshot()
        if self.parser is not None:
            self.state.parser = self.parser.snapshot()
        return self.state

    def step(self, choice: GenerateChunkChoice) -> ChatChunkChoice:
        st, model, chat_req = self.state, self.model, self.req.chat_request
        _check_position(st, choice)
        st.choice_index = choice.index
        tok = model.tokenizer
        delta_ids = list(choice.token_ids or ())
        text_ids, stop_reason = drop_stop_token(
            delta_ids, choice.finish_reason, choice.stop_reason, chat_req, tok.eos_token_id, model.eos_token_ids
        )
        text = self.detok.feed(text_ids) if text_ids else ""
        finishing = choice.finish_reason is not None
        hide_metadata = self.parser is not None and not chat_req.include_reasoning
        delta = ChatDelta()
        if self.parser is None:
            delta.content = text or None
        else:
            parsed = self.parser.feed(text, delta_ids) if delta_ids else Delta()
            if finishing:
                parsed = merge_deltas(parsed, self.parser.finish().delta)
            delta.content = parsed.content or None
            delta.reasoning = parsed.reasoning or None
            if parsed.tool_calls:
                _pin_tool_call_ids(parsed.tool_calls, st.tool_call_ids)
                split = self.parser.incremental
                delta.tool_calls = [e for tc in parsed.tool_calls for e in tool_call_entries(tc, split)]
        if not st.role_sent:
            delta.role = "assistant"
            st.role_sent = True

        logprobs = None
        if choice.logprobs is not None and not hide_metadata:
            logprobs, _ = chat_logprobs(tok, choice.logprobs, chat_top_limit(chat_req), st.logprob_context)
        st.logprob_context = _logprob_context(st.logprob_context, delta_ids)
        st.output_tokens += len(delta_ids)

        reason = choice.finish_reason
        if finishing:
            st.finished = True
            if self.parser is not None:
                # Calls sent, as the one-shot answer counts them (not those a parser dropped).
                reason = chat_finish_reason(reason, chat_req.tool_choice, self.parser.started_calls > 0)
        return_ids = chat_req is not None and bool(chat_req.return_token_ids) and not hide_metadata
        return ChatChunkChoice(
            index=choice.index,
            delta=delta,
            logprobs=logprobs,
            finish_reason=reason,
            stop_reason=stop_reason,
            token_ids=delta_ids if return_ids else None,
        )


# ---------------------------------------------------------------------------------- completion


def completion_chunk(model: ModelContext, cfg: ServeConfig, req: DerenderCompletionRequest) -> dict:
    chunk = _require_chunk(req.generate_chunk, _COMPLETION_LOC)
    loaded = codec.load(model, cfg, req.stream_state, codec.COMPLETION, f"{_COMPLETION_LOC}.stream_state")
    creq = req.completion_request
    if creq is not None and creq.stop:
        raise bad_request(STOP_STRINGS_ERROR)
    prompt_ids = req.prompt_token_ids
    if prompt_ids is not None:
        prompt_ids = lax.token_ids(prompt_ids, "body.prompt_token_ids")
    if isinstance(req.prompt_tokens, list):
        raise validation_error(f"{_COMPLETION_LOC}.prompt_tokens", "int_type", "Input should be a valid integer")
    check_prompt_ids(model, prompt_ids)
    choice = _one_choice(chunk, "derender_completion_stream")
    _check_length(model, prompt_ids, _prior_len(loaded), _delta_len(choice))
    _check_prior_ids(model, loaded)
    if choice is not None:
        check_choice_bounds(model, cfg, choice)

    tok = model.tokenizer
    state, detok = _open_completion(model, creq, loaded, prompt_ids if prompt_ids is not None else chunk.prompt_token_ids)

    choices = []
    return_ids = creq is not None and bool(creq.return_token_ids)
    if choice is not None:
        _check_position(state, choice)
        state.choice_index = choice.index
        delta_ids = list(choice.token_ids or ())
        text_ids, stop_reason = drop_stop_token(
            delta_ids, choice.finish_reason, choice.stop_reason, creq, tok.eos_token_id, model.eos_token_ids
        )
        text = detok.feed(text_ids) if text_ids else ""
        logprobs = None
        next_offset = state.text_offset + len(text)
        if choice.logprobs is not None:
            logprobs, _, end = completion_logprobs(
                tok, choice.logprobs, completion_top_limit(creq), state.logprob_context, state.text_offset
            )
            if logprobs["tokens"]:
                next_offset = end
        state.text_offset = next_offset
        state.logprob_context = _logprob_context(state.logprob_context, delta_ids)
        state.output_tokens += len(delta_ids)
        state.finished = state.finished or choice.finish_reason is not None
        choices.append(
            CompletionChunkChoice(
                index=choice.index,
                text=text,
                logprobs=logprobs,
                finish_reason=choice.finish_reason,
                stop_reason=stop_reason,
                prompt_token_ids=chunk.prompt_token_ids if return_ids else None,
                token_ids=delta_ids if return_ids else None,
            )
        )
    state.detokenizer = detok.snapshot()
    body = CompletionChunk(choices=choices, **_chunk_fields(model, req, chunk))
    return {"chunk": body, "stream_state": codec.encode(model, cfg, state)}


def _open_completion(model: ModelContext, creq: Any, loaded: StreamState | VllmStreamState | None,
                     seed: list[int] | None) -> tuple[StreamState, Detokenizer]:
    """A completion choice's state and detokenizer: restored, resumed from vLLM's, or new."""
    detok = Detokenizer(model.tokenizer, skip_special_tokens(creq, False))
    if isinstance(loaded, StreamState):
        try:
            detok.restore(loaded.detokenizer)
        except (ValueError, TypeError, IndexError) as e:
            raise _state_error(str(e)) from None
        return loaded, detok
    state = StreamState(codec.COMPLETION, False, [])
    if loaded is None:
        detok.seed(seed)
        return state, detok
    try:
        detok.resume(loaded.prev_tokens, loaded.prefix_offset, loaded.read_offset)
    except ValueError as e:
        raise _state_error(f"detokenization failed ({e})") from None
    state.logprob_context = list(loaded.logprob_context_token_ids)
    state.text_offset = loaded.logprob_text_offset
    state.output_tokens = len(loaded.output_token_ids)
    return state, detok
