"""Olmo 3 reasoning: optional plain-text ``<think>``, reasoning up to the first ``</think>``.

Its tool calls are the ``olmo3`` variant of the pythonic call list (``families/pythonic.py``).
"""

from __future__ import annotations

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.held import WholeTextParser
from tokenbridge.parsers.engine.lexer import token_id
from tokenbridge.parsers.registry import reasoning_parser


@reasoning_parser("olmo3", family="olmo3")
class Olmo3ReasoningParser(WholeTextParser):
    """Olmo 3: an optional leading ``<think>``, reasoning up to the first ``</think>``; without
    an end marker the whole output is content. Both markers are plain text, not tokens."""

    name = "olmo3"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """``</think>`` as its pre-token pieces: ``</`` (or ``Ġ</``), ``think``, ``>``."""
        vocab = ctx.vocab
        first = {token_id(vocab, t) for t in ("Ġ</", "</")} - {None}
        rest = [token_id(vocab, t) for t in ("think", ">")]
        if not first or None in rest:
            return False
        ids = prompt_token_ids
        return any(
            ids[i] in first and ids[i + 1 : i + 3] == rest for i in range(len(ids) - 2)
        )

    def split(self, text: str) -> tuple[str | None, str | None]:
        body = text.removeprefix("<think>")
        reasoning, found, content = body.partition("</think>")
        if not found:
            return None, text
        return reasoning or None, content or None
