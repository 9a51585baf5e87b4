"""Engine families whose vLLM split adds a step the marker table cannot say.

Each class runs ``MarkerEngineParser`` over its format row and wraps its output:

* Gemma-4 prepends a missing ``<|channel>`` when the whole output looks like a thought
  (``<channel|>`` without an opener, or a ``thought\\n`` start) and drops the ``thought\\n``
  label from the reasoning. Whether the opener is missing depends on the whole output, so the
  text is held until a ``<|channel>`` settles it or the output ends.
* Granite 4.2 thinking drops the newlines that open the content, and swaps a lone reasoning
  into the content when asked for non-empty content.
* PLaMo-3 has a thinking-off grammar of its own and cuts a truncated ``<|plamo:…`` marker
  off the end of the reasoning.
* Mistral picks its markers from the tokenizer: ``[THINK]``/``[/THINK]`` tokens (v13+),
  text ``<think>``/``</think>`` (v11+), or no reasoning at all (older tokenizers).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.reasoning.think import NEMOTRON_V3
from tokenbridge.parsers.engine.reasoning import (
    IdentityReasoningParser,
    MarkerEngineParser,
    MarkerFormat,
    engine_reasoning_ended,
)
from tokenbridge.parsers.engine.lexer import token_id
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_OFF

# -- Gemma-4 ----------------------------------------------------------------------------------

_CHANNEL_OPEN, _CHANNEL_CLOSE = "<|channel>", "<channel|>"
_THOUGHT_LABEL = "thought\n"
_GEMMA4_TURN_BOUNDARIES = ("<|turn>", "<|tool_response>")

GEMMA4 = MarkerFormat(
    start=(_CHANNEL_OPEN,),
    end=(_CHANNEL_CLOSE,),
    implicit_end=("<|tool_call>",),
    tool_close=("<tool_call|>",),
    content_drops=("<tool_call|>",),
    literals=("call:", ":", "{", "(", '<|"|>'),
    starts_in_reasoning=False,
    reopen=True,
)


@reasoning_parser("gemma4", family="gemma4")
class Gemma4ReasoningParser(MarkerEngineParser):
    """Gemma-4 ``<|channel>thought\\n…<channel|>`` reasoning (vLLM's Gemma4 engine)."""

    fmt = GEMMA4
    name = "gemma4"

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        vocab = ctx.vocab
        # vLLM injects the opener only when the tokenizer knows both channel tokens.
        self.can_inject = vocab is None or (
            token_id(vocab, _CHANNEL_OPEN) is not None
            and token_id(vocab, _CHANNEL_CLOSE) is not None
        )
        self.pending: str | None = ""  # None once the opener question is settled
        self.label = ""  # reasoning held while it may still be the ``thought\n`` label
        self.label_done = False

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """The engine's check: thinking (``enable_thinking``, default off) waits for an end."""
        vocab = ctx.vocab
        wait = ENABLE_THINKING_DEFAULT_OFF.of(ctx)
        end_ids = {token_id(vocab, m) for m in (_CHANNEL_CLOSE, "<|tool_call>")} - {None}
        if token_id(vocab, _CHANNEL_CLOSE) is None:
            end_ids = set()
        start = token_id(vocab, _CHANNEL_OPEN)
        bounds = {token_id(vocab, m) for m in _GEMMA4_TURN_BOUNDARIES} - {None}
        for t in reversed(prompt_token_ids):
            if t in end_ids:
                return True
            if t == start:
                return False
            if t in bounds:
                break
        return not wait

    def _strip_label(self, r: str, final: bool) -> str:
        if self.label_done:
            return r
        self.label += r
        if self.label.startswith(_THOUGHT_LABEL):
            out = self.label[len(_THOUGHT_LABEL) :]
        elif _THOUGHT_LABEL.startswith(self.label) and not final:
            return ""
        elif self.label == _THOUGHT_LABEL.rstrip():
            out = ""
        else:
            out = self.label
        self.label, self.label_done = "", True
        return out

    def _engine(self, text: str, final: bool) -> tuple[str, str]:
        self.buf += text
        r, c = self._run(final)
        return self._strip_label(r, final), c

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        if self.pending is not None:
            self.pending += text
            if _CHANNEL_OPEN not in self.pending:
                return "", ""
            text, self.pending = self.pending, None
        return self._engine(text, False)

    def finish(self) -> tuple[str, str]:
        text = ""
        if self.pending is not None:
            text, self.pending = self.pending, None
            if self.can_inject and (
                _CHANNEL_CLOSE in text
                or text.startswith(_THOUGHT_LABEL)
                or text == _THOUGHT_LABEL.rstrip()
            ):
                text = _CHANNEL_OPEN + text
        return self._engine(text, True)

    def snapshot(self) -> Any:
        return [super().snapshot(), self.pending, self.label, self.label_done]

    def restore(self, snap: Any) -> None:
        if not (
            isinstance(snap, list)
            and len(snap) == 4
            and (snap[1] is None or isinstance(snap[1], str))
            and isinstance(snap[2], str)
            and isinstance(snap[3], bool)
        ):
            raise ValueError("bad reasoning parser state")
        super().restore(snap[0])
        self.pending, self.label, self.label_done = snap[1:]


# -- Granite 4.2 thinking ---------------------------------------------------------------------


@reasoning_parser("granite_thinking_parser", "granite_thinking", family="qwen3")
class GraniteThinkingReasoningParser(MarkerEngineParser):
    """Granite 4.2: Nemotron-3 rules; leading newlines of the content are dropped, and with
    ``enable_thinking: false`` or ``force_nonempty_content`` an output that never reached
    content gives its reasoning as the content (so reasoning is held until content starts)."""

    fmt = NEMOTRON_V3
    name = "granite_thinking_parser"

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        kw = ctx.chat_template_kwargs or {}
        self.force = kw.get("enable_thinking") is False or kw.get("force_nonempty_content") is True
        self.content_seen = False  # raw content (even a newline) arrived: no swap
        self.content_started = False  # a non-newline content character arrived
        self.held = ""  # reasoning held while a swap is possible

    def _route(self, r: str, c: str, final: bool) -> tuple[str, str]:
        if c:
            self.content_seen = True
        if not self.content_started and c:
            c = c.lstrip("\n")
            self.content_started = bool(c)
        if self.force and self.thinking and not self.content_seen:
            self.held += r
            if not final:
                return "", c
            r, self.held = self.held, ""
            self.empty_reasoning = None
            return "", r
        if self.held:
            r, self.held = self.held + r, ""
        return r, c

    def snapshot(self) -> Any:
        return [super().snapshot(), self.content_seen, self.content_started, self.held]

    def restore(self, snap: Any) -> None:
        if not (
            isinstance(snap, list)
            and len(snap) == 4
            and isinstance(snap[1], bool)
            and isinstance(snap[2], bool)
            and isinstance(snap[3], str)
        ):
            raise ValueError("bad reasoning parser state")
        super().restore(snap[0])
        self.content_seen, self.content_started, self.held = snap[1:]


# -- PLaMo-3 ----------------------------------------------------------------------------------

MISTRAL = MarkerFormat(
    start=("[THINK]",),
    end=("[/THINK]",),
    implicit_end=("[TOOL_CALLS]",),
    literals=("[ARGS]", "{"),
    starts_in_reasoning=False,
    wait_for_reasoning=True,
    reopen=True,
)
#: Mistral v11 (tekken with ``[ARGS]`` but no ``[THINK]``): the same grammar over text markers.
MISTRAL_TEXT = replace(MISTRAL, start=("<think>",), end=("</think>",))


def mistral_format(vocab: Any) -> MarkerFormat | None:
    """vLLM's choice by tokenizer; ``None`` (no reasoning) for pre-v11 tokenizers.

    vLLM asks mistral_common whether the tokenizer supports grammars (tekken v11+); the
    ``[ARGS]`` token, new in v11, stands for that here.
    """
    if token_id(vocab, "[THINK]") is not None:
        return MISTRAL
    if token_id(vocab, "[ARGS]") is not None:
        return MISTRAL_TEXT
    return None


@reasoning_parser("mistral", family="mistral")
class MistralReasoningParser(MarkerEngineParser):
    """Mistral ``[THINK]…[/THINK]`` reasoning (vLLM's Mistral engine); old tokenizers: none."""

    fmt = MISTRAL
    name = "mistral"

    def __new__(cls, ctx: ParseContext) -> Any:
        if mistral_format(ctx.vocab) is None:
            return IdentityReasoningParser(ctx)
        return super().__new__(cls)

    def __init__(self, ctx: ParseContext) -> None:
        self.fmt = mistral_format(ctx.vocab) or MISTRAL
        super().__init__(ctx)

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        fmt = mistral_format(ctx.vocab)
        if fmt is None:
            return IdentityReasoningParser.reasoning_ended_in_prompt(prompt_token_ids, ctx)
        return engine_reasoning_ended(fmt, prompt_token_ids, ctx)
