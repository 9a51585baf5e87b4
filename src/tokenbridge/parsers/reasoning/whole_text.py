"""Formats whose vLLM split depends on the whole output, so the output is held until the end.

Granite's phrase markers, K2 Horizon's effort markers, Ernie-4.5's ``<response>`` window,
Olmo 3's optional text markers and Hunyuan-A13B's ``<answer>`` block
decide reasoning versus content only once the closing marker is seen (or not), so any text
emitted early could be wrong. These parsers buffer and split once, in ``finish``: exact and
chunking-invariant, at the price of a snapshot that grows with the output.
"""

from __future__ import annotations

import re
from typing import Any

from tokenbridge.parsers.base import ParseContext, ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.reasoning.think import _token_id


class WholeTextParser(ReasoningParser):
    """Buffers the output; ``split`` gives vLLM's ``(reasoning, content)`` for all of it."""

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.buf = ""

    def split(self, text: str) -> tuple[str | None, str | None]:
        raise NotImplementedError

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        self.buf += text
        return "", ""

    def finish(self) -> tuple[str, str]:
        reasoning, content = self.split(self.buf)
        self.buf = ""
        self.empty_reasoning = None if reasoning is None else ""
        self.empty_content = None if content is None else ""
        return reasoning or "", content or ""

    def snapshot(self) -> Any:
        return self.buf

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, str):
            raise ValueError("bad reasoning parser state")
        self.buf = snap


_GRANITE = re.compile(
    r"(?:Here's|Here is) my thought process:(.*?)(?:Here's|Here is) my response:(.*)", re.DOTALL
)


@reasoning_parser("granite", family="granite")
class GraniteReasoningParser(WholeTextParser):
    """Granite 3.x: "Here is my thought process: … Here is my response: …"; no match, all content."""

    name = "granite"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        # vLLM's base ``is_reasoning_end`` has no body: render reports null.
        return None  # type: ignore[return-value]

    def split(self, text: str) -> tuple[str | None, str | None]:
        m = _GRANITE.search(text)
        if not m:
            return None, text
        return m.group(1), m.group(2) or None


_K2H_EFFORT = {
    "high": ("<ifm|think>", "</ifm|think>"),
    "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
    "low": ("<ifm|think_faster>", "</ifm|think_faster>"),
}
_K2H_TOOL_CALLS = "<ifm|tool_calls>"


@reasoning_parser("k2_horizon", family="k2_horizon")
class K2HorizonReasoningParser(WholeTextParser):
    """K2 Horizon: markers by ``reasoning_effort``; without an end marker, reasoning ends at
    ``<ifm|tool_calls>`` or, failing that, everything is content."""

    name = "k2_horizon"

    @staticmethod
    def _markers(ctx: ParseContext) -> tuple[str, str]:
        return _K2H_EFFORT.get(ctx.kwarg("reasoning_effort", "high"), _K2H_EFFORT["high"])

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = (_token_id(ctx.vocab, m) for m in cls._markers(ctx))
        tool = _token_id(ctx.vocab, _K2H_TOOL_CALLS)
        for t in reversed(prompt_token_ids):
            if t == start:
                return False
            if t == end or t == tool:
                return True
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        start, end = self._markers(self.ctx)
        text = text.removeprefix(start)
        if end in text:
            reasoning, _, content = text.partition(end)
            return reasoning, content or None
        i = text.find(_K2H_TOOL_CALLS)
        if i != -1:
            return text[:i], text[i:]
        return "", text or None


@reasoning_parser("ernie45", family="ernie45")
class Ernie45ReasoningParser(WholeTextParser):
    """Ernie-4.5: R1 rules, then the content is narrowed to ``<response>…</response>``."""

    name = "ernie45"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = _token_id(ctx.vocab, "<think>"), _token_id(ctx.vocab, "</think>")
        for t in reversed(prompt_token_ids):
            if t == start:
                return False
            if t == end:
                return True
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        before, found, after = text.partition("<think>")
        text = after if found else before
        if "</think>" not in text:
            return text, None
        reasoning, _, content = text.partition("</think>")
        i, j = content.find("<response>"), content.rfind("</response>")
        if i != -1 and j != -1 and i < j:
            content = content[i + len("<response>") : j]
        return reasoning, content or None


@reasoning_parser("olmo3", family="olmo3")
class Olmo3ReasoningParser(WholeTextParser):
    """Olmo 3: an optional leading ``<think>``, reasoning up to the first ``</think>``; without
    an end marker the whole output is content. Both markers are plain text, not tokens."""

    name = "olmo3"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """``</think>`` as its pre-token pieces: ``</`` (or ``Ġ</``), ``think``, ``>``."""
        vocab = ctx.vocab
        first = {_token_id(vocab, t) for t in ("Ġ</", "</")} - {None}
        rest = [_token_id(vocab, t) for t in ("think", ">")]
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


_HUNYUAN_THINK = "<think>\n"
_HUNYUAN_ANSWER = "\n</think>\n<answer>\n"
_HUNYUAN_ANSWER_END = "\n</answer>"
_HUNYUAN_FULL = re.compile(
    rf"(?:{_HUNYUAN_THINK}(.*?){_HUNYUAN_ANSWER})?(.*?){_HUNYUAN_ANSWER_END}", re.DOTALL
)
_HUNYUAN_HALF = re.compile(rf"{_HUNYUAN_THINK}(.*?){_HUNYUAN_ANSWER}(.*)", re.DOTALL)


@reasoning_parser("hunyuan_a13b", family="hunyuan_a13b")
class HunyuanA13BReasoningParser(WholeTextParser):
    """Hunyuan-A13B: ``<think>\\n…\\n</think>\\n<answer>\\n…\\n</answer>``, all plain text.

    A closing ``\\n</answer>`` bounds the content (text after it is dropped) and makes the
    think block optional; without it, a think block followed by ``<answer>`` is needed (the
    content runs to the end), else everything is content.
    """

    name = "hunyuan_a13b"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        # vLLM's check reads its streaming state, which a fresh parser has not left.
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        m = _HUNYUAN_FULL.search(text)
        if m:
            reasoning, content = m.group(1) or "", m.group(2)
        else:
            m = _HUNYUAN_HALF.search(text)
            if not m:
                return None, text
            reasoning, content = m.groups()
            content = content.removesuffix(_HUNYUAN_ANSWER_END)
        return reasoning or None, content or None
