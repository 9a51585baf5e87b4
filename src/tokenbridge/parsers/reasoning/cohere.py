"""Cohere Command 3 and Command 4: reasoning is the melody filter's reasoning mode.

vLLM 0.33 serves ``cohere_command3``/``cohere_command4`` with one combined parser that runs
Cohere's ``cohere_melody`` filter over the whole output (the reasoning parser's preset when
one is configured). The filter's reasoning is the text in reasoning mode: from
``<|START_THINKING|>`` (and, for Command 4, from the start of the output) up to whichever
mode marker comes next (``<|END_THINKING|>``, ``<|START_ACTION|>``, ``<|START_RESPONSE|>``,
``<|START_TEXT|>``, the end markers), each stretch losing its trailing whitespace and its
citation tags. The tool side's melody reading (``CohereToolParser`` with no reasoning parser
in front) computes exactly that reasoning; this parser reuses it and leaves the rest:

* to the tool parser when one follows: every character outside reasoning mode, including the
  markers that end reasoning (they end the tool parser's text stretches too), with only the
  reasoning text and the markers that open reasoning removed; the tool parser starts in
  content;
* as the filter's content (action blocks dropped) when none does.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from tokenbridge.parsers.base import ParseContext, ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix
from tokenbridge.parsers.tool.cohere import (
    REASONING,
    Command3ToolParser,
    Command4ToolParser,
    CohereToolParser,
)

START_THINKING, END_THINKING, CHATBOT = "<|START_THINKING|>", "<|END_THINKING|>", "<|CHATBOT_TOKEN|>"


class CohereReasoningParser(ReasoningParser):
    engine_based: ClassVar[bool] = True
    melody: ClassVar[type[CohereToolParser]] = Command3ToolParser

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        # The whole filter, reporting reasoning (no reasoning parser in front of it).
        self.filter = self.melody(msgspec.structs.replace(ctx, reasoning_parser=None))
        self.tool_follows = False
        self.mode = self.melody.initial_mode
        self.buf = ""  # text after the last marker that may still hold a partial marker

    def set_tool_follows(self, follows: bool) -> None:
        self.tool_follows = follows

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """vLLM's check, from the prompt's end back: an ``<|END_THINKING|>`` after the last
        ``<|START_THINKING|>`` ends it, reaching ``<|CHATBOT_TOKEN|>`` first does not."""
        vocab = ctx.vocab
        if vocab is None:
            return False
        start, end, chatbot = (vocab.token_to_id(t) for t in (START_THINKING, END_THINKING, CHATBOT))
        ended = False
        for tid in reversed(prompt_token_ids or []):
            if tid == start:
                return ended
            if tid == chatbot:
                return False
            if tid == end:
                ended = True
        return ended

    def _rest(self, text: str, final: bool) -> str:
        """The text outside reasoning mode, markers that end reasoning included."""
        modes = self.melody.modes
        self.buf += text
        out: list[str] = []
        while True:
            pos, marker = find_first(self.buf, modes)
            if marker is None:
                keep = 0 if final else partial_suffix(self.buf, modes)
                cut = len(self.buf) - keep
                if self.mode != REASONING:
                    out.append(self.buf[:cut])
                self.buf = self.buf[cut:]
                return "".join(out)
            if self.mode != REASONING:
                out.append(self.buf[:pos])
            self.mode = modes[marker]
            if self.mode != REASONING:
                out.append(marker)
            self.buf = self.buf[pos + len(marker):]

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        d = self.filter.feed(text, token_ids)
        if self.tool_follows:
            return d.reasoning, self._rest(text, False)
        return d.reasoning, d.content

    def finish(self) -> tuple[str, str]:
        d = self.filter.finish()
        if self.tool_follows:
            return d.reasoning, self._rest("", True)
        return d.reasoning, d.content

    def snapshot(self) -> Any:
        return [self.filter.snapshot(), self.mode, self.buf]

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, list) or len(snap) != 3 or snap[1] not in set(self.melody.modes.values()) | {
            self.melody.initial_mode
        }:
            raise ValueError("unexpected reasoning parser state")
        self.filter.restore(snap[0])
        self.mode, self.buf = snap[1], str(snap[2])


@reasoning_parser("cohere_command3", "cohere_cmd", family="cohere")
class Command3ReasoningParser(CohereReasoningParser):
    """Command A / R7B (melody preset ``cmd3``); SMG calls it ``cohere_cmd``."""


@reasoning_parser("cohere_command4", family="cohere")
class Command4ReasoningParser(CohereReasoningParser):
    """Command 4 (melody preset ``cmd4``): the output starts in reasoning."""

    melody = Command4ToolParser
