"""gpt-oss reasoning: the Harmony ``analysis`` channel, read from token ids.

The content it returns is the ``final`` (and recipient-less ``commentary``) channel, which is
the whole answer when no tool parser runs (e.g. ``tool_choice: "none"``): tool-call messages
are never content. When the ``openai`` tool parser runs too, it reads the same ids itself.
"""

from __future__ import annotations

from typing import Any

from tokenbridge.parsers.base import ParseContext, ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.tool.harmony import HarmonyStream


@reasoning_parser("openai_gptoss", "gpt-oss", "gpt_oss", family="harmony")
class HarmonyReasoningParser(ReasoningParser):
    """The analysis channel of gpt-oss output, read from the token ids."""

    # vLLM's Harmony parser always reads the channels, whatever tool_choice is.
    engine_based = True

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """vLLM's gpt-oss parser reports reasoning as always ended (render's ``reasoning_ended``)."""
        return True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.stream = HarmonyStream(want_reasoning=True, want_tools=False, vocab=ctx.vocab)

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        reasoning, content, _ = self.stream.feed(token_ids)
        return reasoning, content

    def finish(self) -> tuple[str, str]:
        reasoning, content, _ = self.stream.finish()
        return reasoning, content

    def snapshot(self) -> Any:
        return self.stream.snapshot()

    def restore(self, snap: Any) -> None:
        self.stream.restore(snap)
