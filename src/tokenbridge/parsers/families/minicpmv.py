"""MiniCPM-V: the Qwen3 engine row, passthrough markers, and escaped-newline recovery.

vLLM 0.33's ``minicpmv`` runs the Qwen3 grammar with three differences:

* ``<|im_end|>``, ``<reserved_12..15>`` and ``<|reserved_12..15|>`` are passthrough markers:
  dropped wherever they appear, in reasoning as in content.
* Without thinking (``enable_thinking`` falsy) the output starts in content, but a ``<think>``
  there still opens a reasoning span, which is thrown away (the answer keeps no reasoning).
* The tokenizer writes a newline as the two characters ``\\`` ``n``. vLLM's serving parser
  turns ``\\n``, ``\\r`` and ``\\r\\n`` back into a newline in the reasoning and in the content
  left after tool extraction (tool arguments keep them), except inside code fences, inline
  code, ``$…$``/``$$…$$`` and ``\\(…\\)``/``\\[…\\]``, and except in runs of backslashes.

The reasoning parser recovers its own reasoning. The content is recovered after the tool
parser ran, so this parser hands ``OutputParser`` a ``content_filter`` to apply there.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Annotated, Any, Literal

import msgspec

from tokenbridge.parsers.base import ParseContext, ParserState, Stateful
from tokenbridge.parsers.engine.reasoning import (
    EngineState,
    DROP,
    MarkerEngineParser,
    MarkerFormat,
    MarkerLexer,
    per_vocab,
    engine_reasoning_ended,
)
from tokenbridge.parsers.families.qwen import QWEN3
from tokenbridge.parsers.registry import reasoning_parser

# -- escaped newlines ---------------------------------------------------------------------------

#: Characters that may start an escape or a verbatim span.
_SPECIAL = re.compile(r"[`$\\]")
#: A verbatim span's opener (after a single backslash for the LaTeX ones) -> its closer.
_LATEX = {"(": "\\)", "[": "\\]"}
#: What a not-yet-final text may end with while its meaning is undecided: a backtick run
#: that may grow into a fence, a ``$`` that may become ``$$``, ``\r`` that may become ``\r\n``.
_UNDECIDED_TAILS = frozenset(("`", "``", "$", "\\", "\\r", "\\r\\"))


class EscapedState(ParserState):
    closer: Literal["`", "```", "$", "$$", "\\)", "\\]"] | None  # the open verbatim span's
    held: Annotated[str, msgspec.Meta(max_length=4096)]  # the undecided tail


class EscapedNewlines(Stateful):
    """Streams text with ``\\n``/``\\r``/``\\r\\n`` turned into newlines outside verbatim spans.

    ``feed`` returns what is decided; an undecided tail (see ``_UNDECIDED_TAILS``, a run of
    backslashes that may still grow, or a partial closer of the open span) is held back.
    State: the open span's closer and the held tail.
    """

    State = EscapedState

    def __init__(self) -> None:
        self.closer: str | None = None
        self.held = ""

    def feed(self, text: str, final: bool = False) -> str:
        buf = self.held + text
        self.held = ""
        if self.closer is None and _SPECIAL.search(buf) is None:
            return buf
        out: list[str] = []
        i, n = 0, len(buf)
        while i < n:
            closer = self.closer
            if closer is not None:
                j = buf.find(closer, i)
                if j != -1:
                    out.append(buf[i : j + len(closer)])
                    i = j + len(closer)
                    self.closer = None
                    continue
                cut = n if final else _partial_closer_at(buf, i, closer)
                out.append(buf[i:cut])
                self.held = buf[cut:]
                break
            m = _SPECIAL.search(buf, i)
            if m is None:
                out.append(buf[i:])
                break
            j = m.start()
            out.append(buf[i:j])
            i = j
            if not final and buf[j:] in _UNDECIDED_TAILS:
                self.held = buf[j:]
                break
            c = buf[j]
            if c == "`":
                opener = "```" if buf.startswith("```", j) else "`"
                out.append(opener)
                self.closer = opener
                i = j + len(opener)
            elif c == "$":
                opener = "$$" if buf.startswith("$$", j) else "$"
                out.append(opener)
                self.closer = opener
                i = j + len(opener)
            else:
                k = j + 1
                while k < n and buf[k] == "\\":
                    k += 1
                if k - j > 1:  # a run of backslashes stays as written, and so does what follows
                    if not final and k == n:
                        self.held = buf[j:]
                        break
                    out.append(buf[j:k])
                    i = k
                elif buf.startswith("\\r\\n", j):
                    out.append("\n")
                    i = j + 4
                elif k < n and buf[k] in "nr":
                    out.append("\n")
                    i = j + 2
                elif k < n and buf[k] in _LATEX:
                    out.append(buf[j : j + 2])
                    self.closer = _LATEX[buf[k]]
                    i = j + 2
                else:
                    out.append("\\")
                    i = j + 1
        return "".join(out)

    def finish(self) -> str:
        return self.feed("", final=True)


def _partial_closer_at(buf: str, pos: int, closer: str) -> int:
    """The first ``j >= pos`` where ``buf[j:]`` is a proper prefix of ``closer``, else ``len``."""
    n = len(buf)
    for j in range(max(pos, n - len(closer) + 1), n):
        if closer.startswith(buf[j:]):
            return j
    return n


# -- the reasoning parser -----------------------------------------------------------------------

PASSTHROUGH = ("<|im_end|>",) + tuple(
    marker for i in range(12, 16) for marker in (f"<reserved_{i}>", f"<|reserved_{i}|>")
)
#: Thinking on: Qwen3's row without turn boundaries (vLLM's MiniCPM-V grammar has none, so
#: the prompt never starts the output in content); passthrough markers are dropped in content
#: here and in reasoning by the lexer below.
MINICPMV = replace(QWEN3, turn_boundaries=(), content_drops=PASSTHROUGH)
#: Thinking off: the output starts in content, and ``<think>`` there opens a reasoning span.
MINICPMV_OFF = replace(MINICPMV, reopen=True, off_is_identity=False)


def _passthrough_lexer(fmt: MarkerFormat, vocab: Any) -> MarkerLexer:
    lexer = MarkerLexer(fmt, vocab)
    for marker in PASSTHROUGH:
        lexer.actions[1][marker] = DROP
    return lexer


class MiniCPMVState(ParserState):
    base: EngineState
    reasoning_filter: EscapedState


@reasoning_parser("minicpmv", family="minicpmv")
class MiniCPMVReasoningParser(MarkerEngineParser):
    """MiniCPM-V (vLLM's ``minicpmv``): see the module docstring."""

    fmt = MINICPMV
    name = "minicpmv"
    State = MiniCPMVState

    def __init__(self, ctx: ParseContext) -> None:
        self.fmt = self.format_for(ctx)
        super().__init__(ctx)
        self._lexer = per_vocab("minicpmv_lexer", self.fmt, ctx.vocab, _passthrough_lexer)
        #: Reasoning is kept only with thinking on; a span opened without it is dropped.
        self.keep_reasoning = self.fmt is MINICPMV
        self.reasoning_filter = EscapedNewlines()
        #: Applied by ``OutputParser`` to the content the tool parser leaves.
        self.content_filter = EscapedNewlines()

    @staticmethod
    def format_for(ctx: ParseContext) -> MarkerFormat:
        on = MINICPMV.thinking.of(ctx)
        return MINICPMV if on else MINICPMV_OFF

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return engine_reasoning_ended(cls.format_for(ctx), prompt_token_ids, ctx)

    def _reasoning(self, r: str, final: bool) -> str:
        if not self.keep_reasoning:
            return ""
        return self.reasoning_filter.feed(r, final)

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        r, c = super().feed(text, token_ids)
        return self._reasoning(r, False), c

    def finish(self) -> tuple[str, str]:
        r, c = super().finish()
        return self._reasoning(r, True), c
