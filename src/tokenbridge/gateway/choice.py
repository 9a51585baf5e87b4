"""One choice of a generation, held in memory while the engine streams it.

The objects are the derender routes' own (``Detokenizer``, ``build_choice_parser``'s parser,
``drop_stop_token``, the logprob builders); only the stream state stays in memory instead of
travelling in ``stream_state``. Stop strings are applied here, since a ``--tokens-only``
engine refuses them: text is released as soon as it cannot be the start of a stop string,
and a match ends the choice at the token that completed it, as vLLM's detokenizer does.
"""

from __future__ import annotations

from typing import Any

from tokenbridge.derender.decode import finish_reason as chat_finish_reason
from tokenbridge.derender.decode import skip_special_tokens
from tokenbridge.derender.detokenizer import Detokenizer
from tokenbridge.derender.logprobs import (
    CONTEXT_WINDOW,
    chat_logprobs,
    chat_top_limit,
    completion_logprobs,
    completion_top_limit,
)
from tokenbridge.derender.parsing import ChoiceParser, build_choice_parser
from tokenbridge.derender.stops import drop_stop_token, find_stop_string, stop_strings
from tokenbridge.model.context import ModelContext
from tokenbridge.parsers.base import Delta, ToolCallDelta, merge_deltas
from tokenbridge.protocol.engine import GenerateChunkChoice, GenerateLogprobs


class StopWatch:
    """Stop strings over a choice's text: what may be released now, and the match."""

    __slots__ = ("stops", "include", "held", "longest")

    def __init__(self, stops: list[str], include: bool) -> None:
        self.stops = stops
        self.include = include
        self.held = ""
        self.longest = max(len(s) for s in stops)

    def feed(self, text: str, search: bool = True) -> tuple[str, str | None]:
        """The text that can be sent, and the stop string when one completed. Like vLLM, only
        a stop string that ends in ``text`` counts: one completed while ``search`` was off
        (the first ``min_tokens`` tokens) is passed over, even while its text is held."""
        pending = self.held + text
        if search:
            match = find_stop_string(pending, len(text), self.stops, self.include)
            if match is not None:
                stop, cut = match
                self.held = ""
                if cut == -1:
                    return pending, stop
                return pending[:cut], stop
        keep = self._partial(pending)
        self.held = pending[len(pending) - keep :] if keep else ""
        return (pending[: len(pending) - keep] if keep else pending), None

    def _partial(self, text: str) -> int:
        """The length of the longest tail of ``text`` that begins some stop string."""
        for n in range(min(len(text), self.longest - 1), 0, -1):
            tail = text[-n:]
            if any(s.startswith(tail) for s in self.stops):
                return n
        return 0

    def flush(self) -> str:
        text, self.held = self.held, ""
        return text


class Step:
    """What one engine delta became for one choice."""

    __slots__ = ("text", "token_ids", "logprobs", "finish_reason", "stop_reason", "stopped")

    def __init__(self, text: str, token_ids: list[int], logprobs: GenerateLogprobs | None,
                 finish_reason: str | None, stop_reason: Any, stopped: bool) -> None:
        self.text = text
        self.token_ids = token_ids
        self.logprobs = logprobs
        self.finish_reason = finish_reason
        self.stop_reason = stop_reason
        self.stopped = stopped  # a stop string matched: the engine request is to be aborted


class ChoiceText:
    """A choice's text as the engine's detokenizer would produce it, stop strings applied."""

    __slots__ = ("model", "request", "detok", "stop", "tokens", "min_tokens", "finished", "stopped")

    def __init__(self, model: ModelContext, request: Any, prompt_ids: list[int] | None, preserve_special: bool) -> None:
        self.model = model
        self.request = request
        self.detok = Detokenizer(model.tokenizer, skip_special_tokens(request, preserve_special)).seed(prompt_ids)
        stops = stop_strings(request)
        self.stop = StopWatch(stops, bool(request.include_stop_str_in_output)) if stops else None
        self.min_tokens = request.min_tokens or 0
        self.tokens = 0
        self.finished = False
        self.stopped = False  # a stop string ended it

    def step(self, choice: GenerateChunkChoice) -> Step:
        ids = choice.token_ids or []
        finish = choice.finish_reason
        if finish is None:
            text_ids, stop_reason = ids, choice.stop_reason
        else:
            text_ids, stop_reason = drop_stop_token(
                ids, finish, choice.stop_reason, self.request, self.model.tokenizer.eos_token_id,
                self.model.eos_token_ids
            )
        if self.stop is None:
            self.tokens += len(ids)
            text = self.detok.feed(text_ids) if text_ids else ""
            if finish is not None:
                self.finished = True
            return Step(text, ids, choice.logprobs, finish, stop_reason, False)
        # With stop strings each token is decoded and checked on its own, so a match ends
        # the choice at the token that completed it, whatever the engine's chunking.
        parts = []
        for k, t in enumerate(text_ids):
            self.tokens += 1
            released, matched = self.stop.feed(self.detok.feed([t]), self.tokens > self.min_tokens)
            parts.append(released)
            if matched is not None:
                self.finished = self.stopped = True
                kept = k + 1
                lp = choice.logprobs
                if lp is not None and lp.content is not None:
                    lp = GenerateLogprobs(lp.content[:kept])
                return Step("".join(parts), ids[:kept], lp, "stop", matched, True)
        self.tokens += len(ids) - len(text_ids)
        if finish is not None:
            self.finished = True
            parts.append(self.stop.flush())
        return Step("".join(parts), ids, choice.logprobs, finish, stop_reason, False)


def tool_call_deltas(tc: ToolCallDelta, split: bool) -> list[dict]:
    """vLLM's ``DeltaToolCall`` as it serializes: id, type and name open a call. With ``split``
    (incremental tool-call streaming) arguments that came with the name follow in an entry of
    their own, as vLLM's streaming parsers send them."""
    fn: dict = {}
    if tc.name is not None:
        fn["name"] = tc.name
    if tc.arguments and not (split and tc.id is not None):
        fn["arguments"] = tc.arguments
    if tc.id is None:
        return [{"index": tc.index, "function": fn}]
    entries = [{"id": tc.id, "type": "function", "index": tc.index, "function": fn}]
    if split and tc.arguments:
        entries.append({"index": tc.index, "function": {"arguments": tc.arguments}})
    return entries


class ChatChoice:
    """One streamed chat choice: text, then the parser, then the OpenAI delta."""

    __slots__ = ("index", "text", "parser", "request", "hide_metadata", "top_limit", "context", "role_sent", "calls")

    def __init__(self, index: int, model: ModelContext, cfg, request, prompt_ids: list[int], parsed: bool) -> None:
        self.index = index
        self.request = request
        self.text = ChoiceText(model, request, prompt_ids, parsed)
        self.parser: ChoiceParser | None = (
            build_choice_parser(model, cfg, request, prompt_ids, streaming=True) if parsed else None
        )
        self.hide_metadata = parsed and not request.include_reasoning
        self.top_limit = chat_top_limit(request)
        self.context: list[int] = []
        self.calls = False

    def step(self, model: ModelContext, choice: GenerateChunkChoice) -> tuple[Step, dict | None, Any, str | None]:
        """The step, the delta message (None: nothing to show yet), logprobs and finish reason."""
        first = self.text.tokens == 0
        st = self.text.step(choice)
        finishing = st.finish_reason is not None
        delta: dict | None
        if self.parser is None:
            delta = {"content": st.text}
        elif first and not st.token_ids and not st.text:
            delta = {}
        else:
            parsed = self.parser.feed(st.text, st.token_ids) if (st.text or st.token_ids) else Delta()
            if finishing:
                parsed = merge_deltas(parsed, self.parser.finish().delta)
            delta = {}
            if parsed.reasoning:
                delta["reasoning"] = parsed.reasoning
            if parsed.content:
                delta["content"] = parsed.content
            if parsed.tool_calls:
                split = self.parser.incremental
                delta["tool_calls"] = [e for tc in parsed.tool_calls for e in tool_call_deltas(tc, split)]
                self.calls = True
            if not delta:
                delta = None
        logprobs = None
        if st.logprobs is not None:  # the engine sends them with every chunk or with none
            if not self.hide_metadata:
                logprobs, _ = chat_logprobs(model.tokenizer, st.logprobs, self.top_limit, self.context)
            self.context = (self.context + st.token_ids)[-CONTEXT_WINDOW:]
        reason = st.finish_reason
        if finishing and self.parser is not None:
            reason = chat_finish_reason(reason, self.request.tool_choice, self.parser.calls)
        return st, delta, logprobs, reason


class CompletionChoice:
    """One streamed completion choice: text with stop strings, logprobs with text offsets."""

    __slots__ = ("index", "text", "top_limit", "context", "offset")

    def __init__(self, index: int, model: ModelContext, request, prompt_ids: list[int]) -> None:
        self.index = index
        self.text = ChoiceText(model, request, prompt_ids, False)
        self.top_limit = completion_top_limit(request)
        self.context: list[int] = []
        self.offset = 0

    def step(self, model: ModelContext, choice: GenerateChunkChoice, offset: int = 0) -> tuple[Step, Any]:
        st = self.text.step(choice)
        logprobs = None
        self.offset += offset
        end = self.offset + len(st.text)
        if st.logprobs is not None:
            logprobs, _, last = completion_logprobs(model.tokenizer, st.logprobs, self.top_limit, self.context, self.offset)
            if logprobs["tokens"]:
                end = last
            self.context = (self.context + st.token_ids)[-CONTEXT_WINDOW:]
        self.offset = end
        return st, logprobs
