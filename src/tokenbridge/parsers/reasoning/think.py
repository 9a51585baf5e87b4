"""Marker-delimited reasoning rows not yet in a family module (DeepSeek, Hunyuan, Holo2, Poolside,
Nemotron): ``MarkerFormat`` rows over the engines of ``parsers.engine.reasoning``, and the
DeepSeek-V3.x switch between R1 rules and the identity."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, ClassVar

from tokenbridge.parsers.base import ParseContext, ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.engine.lexer import token_id
from tokenbridge.parsers.engine.thinking import (
    DEEPSEEK_V4, EITHER_FLAG_DEFAULT_OFF, EITHER_FLAG_DEFAULT_ON, HUNYUAN_V3,
    HUNYUAN_V4, ThinkingSwitch,
)
from tokenbridge.parsers.engine.reasoning import (
    IdentityReasoningParser,
    MarkerEngineParser,
    MarkerFormat,
    MarkerPartitionParser,
    register_format,
)
from tokenbridge.parsers.families.qwen import QWEN3

# --- thinking switches (chat_template_kwargs -> is thinking on) ---------------------------


DEEPSEEK_R1 = MarkerFormat(drop_end_in_content=False, drop_special_tokens=False)
NEMOTRON_V3 = replace(QWEN3, strip_trailing_whitespace=True)


_DSML = "｜DSML｜"
DEEPSEEK_V4 = MarkerFormat(
    implicit_end=(f"<{_DSML}tool_calls>", f"<{_DSML}toolcalls>", f"<{_DSML}tool>"),
    literals=(
        f"</{_DSML}tool_calls>",
        f'<{_DSML}invoke name="',
        '">',
        f"</{_DSML}invoke>",
        f"<{_DSML}parameter",
        f"</{_DSML}parameter>",
    ),
    thinking=DEEPSEEK_V4,
    reopen=True,
    off_is_identity=False,
)
DEEPSEEK_V41 = replace(
    DEEPSEEK_V4,
    implicit_end=(f"<{_DSML} calls>",),
    literals=(
        f"</{_DSML} calls>",
        f'<{_DSML} invoke name="',
        '">',
        f"</{_DSML} invoke>",
        f"<{_DSML} parameter",
        f"</{_DSML} parameter>",
    ),
)

DeepSeekR1ReasoningParser = register_format(
    MarkerPartitionParser, DEEPSEEK_R1, "deepseek_r1", "step5", "deepseek-r1", family="deepseek_r1"
)
register_format(MarkerEngineParser, DEEPSEEK_V4, "deepseek_v4", "deepseek-v4", family="deepseek_v4")
register_format(MarkerEngineParser, DEEPSEEK_V41, "deepseek_v41", family="deepseek_v4")


class _Delegating(ReasoningParser):
    """Picks R1-style parsing when thinking is on, the identity otherwise (DeepSeek-V3.x)."""

    thinking: ClassVar[ThinkingSwitch] = EITHER_FLAG_DEFAULT_OFF

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.inner = self._pick(ctx)(ctx)
        self.empty_reasoning = self.inner.empty_reasoning
        self.empty_content = self.inner.empty_content

    @classmethod
    def _pick(cls, ctx: ParseContext) -> type[ReasoningParser]:
        on = cls.thinking.of(ctx)
        return DeepSeekR1ReasoningParser if on else IdentityReasoningParser

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return cls._pick(ctx).reasoning_ended_in_prompt(prompt_token_ids, ctx)

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        return self.inner.feed(text, token_ids)

    def finish(self) -> tuple[str, str]:
        return self.inner.finish()

    def snapshot(self) -> Any:
        return self.inner.snapshot()

    def restore(self, snap: Any) -> None:
        self.inner.restore(snap)


@reasoning_parser("deepseek_v3", "deepseek_v31", "deepseek-v3", "deepseek_v3_1", family="deepseek_v3")
class DeepSeekV3ReasoningParser(_Delegating):
    """DeepSeek-V3.1/V3.2: ``thinking``/``enable_thinking`` on -> R1 rules, else all content."""

    name = "deepseek_v3"


@reasoning_parser("holo2", family="deepseek_v3")
class Holo2ReasoningParser(_Delegating):
    """Holo2: the DeepSeek-V3 switch with thinking on by default."""

    name = "holo2"
    thinking = EITHER_FLAG_DEFAULT_ON


@reasoning_parser("poolside_v1", family="deepseek_v3")
class PoolsideV1ReasoningParser(_Delegating):
    """Poolside V1: the DeepSeek-V3 switch; the prompt check stops at the ``<assistant>`` turn."""

    name = "poolside_v1"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        if cls._pick(ctx) is IdentityReasoningParser:
            return True
        vocab = ctx.vocab
        start, end = token_id(vocab, "<think>"), token_id(vocab, "</think>")
        turn = token_id(vocab, "<assistant>")
        for t in reversed(prompt_token_ids):
            if t == start:
                return False
            if t == end:
                return True
            if t == turn:
                return False
        return False


HY_V3 = MarkerFormat(drop_end_in_content=False, drop_special_tokens=False)


@reasoning_parser("hy_v3", family="hy_v3")
class HYV3ReasoningParser(_Delegating):
    """Hunyuan V3: R1 rules unless ``reasoning_effort`` is missing or ``no_think``."""

    name = "hy_v3"

    @classmethod
    def _pick(cls, ctx: ParseContext) -> type[ReasoningParser]:
        return _HYV3Thinking if HUNYUAN_V3.of(ctx) else IdentityReasoningParser


_HYV3Thinking = type("HYV3ThinkingParser", (MarkerPartitionParser,), {"fmt": HY_V3})


_HYV4_STRUCTURAL = re.compile(r"<(?:think|tool_calls|tool_call|arg_key|arg_value)(:[^\s>]+)?>")


def hy_v4_token_suffix(vocab: Any) -> str:
    """The checkpoint's suffix of Hunyuan V4 structural tokens (``<think:6124c78e>``), or ``""``."""
    get_vocab = getattr(vocab, "get_vocab", None)
    if get_vocab is None:
        return ""
    for token in get_vocab():
        m = _HYV4_STRUCTURAL.fullmatch(token)
        if m:
            return m.group(1) or ""
    return ""


HY_V4 = MarkerFormat(thinking=HUNYUAN_V4, drop_end_in_content=False, drop_special_tokens=False)


@reasoning_parser("hy_v4", family="hy_v4")
class HYV4ReasoningParser(MarkerPartitionParser):
    """Hunyuan V4: R1 rules over ``<think{suffix}>``/``</think{suffix}>``, the suffix read from
    the vocabulary; ``reasoning_effort: no_think`` makes everything content."""

    fmt = HY_V4
    name = "hy_v4"

    def __init__(self, ctx: ParseContext) -> None:
        self.fmt = self.format_for(ctx)
        super().__init__(ctx)

    @staticmethod
    def format_for(ctx: ParseContext) -> MarkerFormat:
        suffix = hy_v4_token_suffix(ctx.vocab)
        return replace(HY_V4, start=(f"<think{suffix}>",), end=(f"</think{suffix}>",))

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        fmt = cls.format_for(ctx)
        if not fmt.thinking.of(ctx):
            return True
        start, end = token_id(ctx.vocab, fmt.start[0]), token_id(ctx.vocab, fmt.end[0])
        for t in reversed(prompt_token_ids):
            if t == start and start is not None:
                return False
            if t == end and end is not None:
                return True
        return False


class NemotronV3ReasoningParser(MarkerEngineParser):
    """Nemotron-3: Qwen3 rules; with ``enable_thinking: false`` or ``force_nonempty_content``
    a blank content swaps places with the reasoning, so both are held until the end."""

    fmt = NEMOTRON_V3
    name = "nemotron_v3"

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        kw = ctx.chat_template_kwargs or {}
        self.force = kw.get("enable_thinking") is False or kw.get("force_nonempty_content") is True
        self.held: list[str] | None = ["", ""] if self.force else None

    def _route(self, r: str, c: str, final: bool) -> tuple[str, str]:
        if self.held is None:
            return r, c
        self.held[0] += r
        self.held[1] += c
        if self.held[1].strip():
            r, c = self.held
            self.held = None
            return r, c
        if not final:
            return "", ""
        r, c = self.held
        self.held = None
        # The swapped-in reasoning is vLLM's content: verbatim ("" kept) when thinking is
        # off, ``None`` when empty otherwise.
        self.empty_reasoning = None if self.thinking else ""
        return c, r

    def snapshot(self) -> Any:
        return [super().snapshot(), self.held]

    def restore(self, snap: Any) -> None:
        if not (isinstance(snap, list) and len(snap) == 2):
            raise ValueError("bad reasoning parser state")
        held = snap[1]
        if held is not None and not (
            isinstance(held, list) and len(held) == 2 and all(isinstance(x, str) for x in held)
        ):
            raise ValueError("bad reasoning parser state")
        super().restore(snap[0])
        self.held = held


reasoning_parser("nemotron_v3", "nano_v3", "nemotron_3", "nemotron3", family="qwen3", keeps_special=True)(
    NemotronV3ReasoningParser
)
