"""Builds a choice's parser from the server flags and the chat request, and gates its output.

``ChoiceParser`` wraps the family parsers with what vLLM does around them for every family:
the ``tool_choice`` mode, ``parallel_tool_calls``, tool-call ids, ``include_reasoning``, and
content that is only whitespace (dropped when calls were made, so it is held until decided).
The same object serves one-shot and streamed derender.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.model.harmony import harmony_encoding
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import Delta, Final, ParseContext, ParserState, Stateful, ToolCallDelta
from tokenbridge.parsers.choice import DropToolCalls, NamedToolChoice, RequiredToolChoice, StreamedRequiredToolChoice
from tokenbridge.parsers.output import OutputParser, OutputState
from tokenbridge.protocol.chat_options import effective_tool_choice, history_tool_call_count, template_kwargs
from tokenbridge.protocol.ids import random_hex
from tokenbridge.protocol.openai import ChatCompletionRequest


def new_tool_call_id() -> str:
    """vLLM's default id (quirk default_call_id)."""
    return f"chatcmpl-tool-{random_hex(8)}"


def has_parser(cfg: ServeConfig) -> bool:
    return bool(cfg.tool_call_parser or cfg.reasoning_parser)


def forces_tool_calls(choice: Any) -> bool:
    return isinstance(choice, dict) or choice == "required"


class ChoiceState(ParserState):
    """``ChoiceParser``'s part of the stream state: the output parser's, the leading whitespace
    held, whether a call was sent, and how many call indexes have their id."""

    inner: OutputState
    ws: str | None
    calls: bool
    started_calls: Annotated[int, msgspec.Meta(ge=0)]


class FilteredChoiceState(ChoiceState):
    """A choice whose reasoning parser has a content filter: its state follows (a fifth field,
    as stream-state version 3 has always written it)."""

    filter: Any  # the filter's own state, validated by it


class ChoiceParser(Stateful):
    __slots__ = ("inner", "forced", "parallel", "engine", "dropping", "ws", "calls", "started_calls", "filter",
                 "incremental", "State")

    def __init__(self, inner: OutputParser, forced: bool, parallel: bool, engine: bool = False) -> None:
        self.inner = inner
        self.forced = forced
        self.parallel = parallel
        self.engine = engine  # vLLM's engine-based pair: no call found leaves null content
        tool = inner.tool
        self.dropping = tool if isinstance(tool, DropToolCalls) else None  # calls found but not shown
        # Leading content that is only whitespace so far (None: decided, or never held).
        self.ws = "" if tool is None or tool.blank_content_is_null else None
        self.calls = False  # a tool call was emitted
        self.started_calls = 0  # indexes that already got their id
        # vLLM rewrites the final content last (MiniCPM-V's escaped newlines): after tool
        # extraction and after the whitespace rule above.
        self.filter = inner.reasoning.content_filter if inner.reasoning is not None else None
        self.incremental = tool is not None and tool.streams_arguments
        self.State = ChoiceState if self.filter is None else FilteredChoiceState

    def _gate(self, d: Delta, final: bool) -> Delta:
        if (not d.tool_calls and self.filter is None and self.dropping is None
                and (self.ws is None or not (d.content or final))):
            return d  # nothing to gate or hold: most chunks of a stream
        calls = []
        for tc in d.tool_calls:
            if not self.parallel and tc.index > 0:  # quirk first_call_only
                continue
            if tc.index >= self.started_calls:
                self.started_calls = tc.index + 1
                if tc.id is None:
                    tc = ToolCallDelta(tc.index, tc.name, tc.arguments, new_tool_call_id())
            calls.append(tc)
        if calls or (self.dropping is not None and self.dropping.found_calls):
            self.calls = True
        content = d.content
        if self.ws is not None:
            pending = self.ws + content
            if pending.strip():
                self.ws, content = None, pending
            else:
                self.ws, content = pending, ""
                if final and not self.calls:
                    # blank text alone is kept, except where a call was forced (quirk forced_blank_is_empty)
                    content, self.ws = ("" if self.forced else pending), None
        if self.filter is not None:
            content = self.filter.feed(content) + (self.filter.finish() if final else "")
        return Delta(content, d.reasoning, calls)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        return self._gate(self.inner.feed(text, token_ids), False)

    def finish(self) -> Final:
        """The last delta, with what vLLM's one-shot message holds for a field that came out
        empty: ``""`` where the text passed through a stage untouched, else null."""
        delta = self._gate(self.inner.finish(), True)
        r = self.inner.reasoning
        content = "" if r is None else r.empty_content  # quirk identity_content_kept_empty
        tool = self.inner.tool
        if self.calls or (tool is not None and tool.null_content):
            content = None  # quirk blank_content_null_with_calls
        elif r is not None and r.keeps_empty_content:
            content = ""  # quirk thinking_off_content_kept_empty
        elif self.dropping is not None:
            content = self.dropping.inner.empty_content  # quirk engine_none_keeps_parser_content
        elif self.engine:
            content = None  # quirk engine_no_call_null_content
        if self.forced:
            content = ""  # quirk forced_content_empty
        # quirk no_reasoning_when_excluded
        reasoning = r.empty_reasoning if r is not None and self.inner.ctx.include_reasoning else None
        return Final(delta, content, reasoning)

    def snapshot(self) -> ChoiceState:
        if self.filter is None:
            return ChoiceState(self.inner.snapshot(), self.ws, self.calls, self.started_calls)
        return FilteredChoiceState(self.inner.snapshot(), self.ws, self.calls, self.started_calls,
                                   self.filter.snapshot())

    def load(self, state: ChoiceState) -> None:
        self.inner.load(state.inner)
        self.ws, self.calls, self.started_calls = state.ws, state.calls, state.started_calls
        if self.filter is not None:
            self.filter.restore(state.filter)


def build_choice_parser(
    model: ModelContext,
    cfg: ServeConfig,
    req: ChatCompletionRequest,
    prompt_ids: list[int] | None,
    streaming: bool = False,
) -> ChoiceParser:
    """``streaming``: for a stream, which sends calls as ``cfg.tool_call_streaming`` says; a
    one-shot answer is the same in both modes."""
    rcls = registry.get_reasoning_parser(cfg.reasoning_parser) if cfg.reasoning_parser else None
    tcls = registry.get_tool_parser(cfg.tool_call_parser) if cfg.tool_call_parser else None
    harmony = any(c is not None and c.uses_harmony for c in (rcls, tcls))
    choice = effective_tool_choice(req)
    kwargs = template_kwargs(req, cfg, req.add_generation_prompt, req.continue_final_message)
    ctx = ParseContext(
        tools=req.tools,
        tool_choice=choice,
        parallel_tool_calls=req.parallel_tool_calls is not False,
        include_reasoning=req.include_reasoning,
        chat_template_kwargs=kwargs,
        prompt_token_ids=list(prompt_ids) if prompt_ids is not None else None,
        history_tool_call_cnt=history_tool_call_count(req.messages),
        vocab=model.tokenizer,
        reasoning_parser=cfg.reasoning_parser,
        response_template=model.tokenizer_config.get("response_template"),
        harmony=harmony_encoding(model.tokenizer) if harmony else None,
    )
    incremental = streaming and cfg.tool_call_streaming == "incremental"
    tool = None
    engine = False
    if tcls is not None:
        named = isinstance(choice, dict)
        required = choice == "required"
        # vLLM treats the pair as engine based only when both parsers are.
        engine = tcls.engine_based and (rcls is None or rcls.engine_based)
        if choice == "none":
            tool = DropToolCalls(tcls(ctx)) if engine else None
        elif named and tcls.supports_required_and_named:
            tool = NamedToolChoice(ctx)
        elif required and tcls.supports_required_and_named:
            tool = StreamedRequiredToolChoice(ctx) if incremental else RequiredToolChoice(ctx)
        elif cfg.enable_auto_tool_choice:
            # Without tools vLLM still runs the parser but keeps none of its calls.
            if not req.tools:
                tool = DropToolCalls(tcls(ctx))
            elif incremental and tcls.incremental is not None:
                tool = tcls.incremental(ctx)
            else:
                tool = tcls(ctx)
    inner = OutputParser(ctx, rcls(ctx) if rcls else None, tool)
    return ChoiceParser(inner, forces_tool_calls(choice), ctx.parallel_tool_calls, engine=tool is not None and engine)
