"""One choice's output parser: reasoning decides first, then tools see the rest.

The same object serves one-shot derender (one ``feed`` then ``finish``) and streaming
(one ``feed`` per chunk, state carried by ``snapshot``/``restore``).

A reasoning parser's ``content_filter`` (see ``ReasoningParser``) is applied last, by derender's
``ChoiceParser``, which keeps its state.
"""

from __future__ import annotations

from typing import Any

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ReasoningParser, Stateful, ToolParser


class OutputState(ParserState):
    reasoning: Any  # each parser's own state, validated by it
    tool: Any


class OutputParser(Stateful):
    __slots__ = ("ctx", "reasoning", "tool")
    State = OutputState

    def __init__(
        self,
        ctx: ParseContext,
        reasoning: ReasoningParser | None,
        tool: ToolParser | None,
    ) -> None:
        self.ctx = ctx
        self.reasoning = reasoning
        self.tool = tool
        # A reasoning parser that splits a format its tool parser shares (hf, beam, Cohere)
        # routes the content itself when no tool parser reads it.
        if reasoning is not None:
            reasoning.set_tool_follows(tool is not None)

    def _route(self, reasoning: str, content: str, token_ids: list[int], final: bool) -> Delta:
        if self.tool is not None:
            d = self.tool.feed(content, token_ids) if content or not final else Delta()
            if final:
                tail = self.tool.finish()
                d = Delta(d.content + tail.content, d.reasoning + tail.reasoning, d.tool_calls + tail.tool_calls)
        else:
            d = Delta(content=content)
        # Some tool families (Cohere) also report reasoning; it follows the reasoning parser's.
        d.reasoning = (reasoning + d.reasoning) if self.ctx.include_reasoning else ""
        return d

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if self.reasoning is None:
            return self._route("", text, token_ids, False)
        r, c = self.reasoning.feed(text, token_ids)
        return self._route(r, c, token_ids, False)

    def finish(self) -> Delta:
        if self.reasoning is None:
            return self._route("", "", [], True)
        r, c = self.reasoning.finish()
        return self._route(r, c, [], True)

    def snapshot(self) -> OutputState:
        return OutputState(
            self.reasoning.snapshot() if self.reasoning else None,
            self.tool.snapshot() if self.tool else None,
        )

    def load(self, state: OutputState) -> None:
        for parser, snap in ((self.reasoning, state.reasoning), (self.tool, state.tool)):
            if parser is not None:
                parser.restore(snap)
            elif snap is not None:
                raise ValueError("bad parser state: a state for a parser not configured")
