"""Gemma 4: ``<|tool_call>call:name{key:<|"|>text<|"|>,n:42}<tool_call|>`` tool calls and
``<|channel>thought\\n…<channel|>`` reasoning.

vLLM 0.33 parses this with its declarative engine; this module replays the engine's one-shot
pass over the post-reasoning content (held until ``finish()``, since the content is stripped
and cut depending on later calls):

* ``<|tool_call>`` opens a call; ``call:`` (or a bare ``:``) starts the name, ``{`` or ``(``
  the arguments, ``<tool_call|>`` (or the end of the text) closes it. Text before the name
  prefix is dropped; a stray ``<tool_call|>`` outside a call vanishes.
* ``<|channel>…<channel|>`` is reasoning and vanishes, unless no reasoning parser is
  configured (then it is plain text). The tokenizer's other special tokens vanish.
* arguments are Gemma's unquoted ``key:value`` syntax, strings between ``<|"|>``; bare
  values stay strings unless the tool schema coerces them. Any non-empty name is accepted.
* with calls, content is the text before the first ``<|tool_call>``, ``strip()``-ed; text
  after it is dropped. ``tool_choice="none"`` keeps every text outside calls.
* the call syntax, read whole and streamed, is in ``families/gemma4_calls.py``.

Reasoning runs vLLM's engine over the ``GEMMA4`` row, and prepends a missing ``<|channel>``
when the whole output looks like a thought (``<channel|>`` without an opener, or a
``thought\\n`` start) and drops the ``thought\\n`` label. Whether the opener is missing
depends on the whole output, so the text is held until a ``<|channel>`` settles it or the
output ends.
"""

from __future__ import annotations

from typing import ClassVar

from tokenbridge.parsers.base import ParseContext, ParserState
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.lexer import token_id
from tokenbridge.parsers.engine.reasoning import EngineState, MarkerEngineParser, MarkerFormat
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_OFF
from tokenbridge.parsers.engine.json import name_and_args_from_json
from tokenbridge.parsers.engine.schema import fix_arg_types
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily
from tokenbridge.parsers.families.gemma4_calls import (
    CALL_END, CALL_START, CHANNEL_END, CHANNEL_START, NAME_IN_JSON, QUOTE, Gemma4StreamedCalls, arguments_json,
    literals,
)


def extract_gemma4(text: str, ctx: ParseContext) -> Extraction:
    markers, drops = literals(ctx)
    lits = sorted({*markers, *drops}, key=len, reverse=True)
    suppress = ctx.tool_choice == "none" and bool(ctx.tools)
    if text and CHANNEL_START not in text and (
        CHANNEL_END in text or text.startswith("thought\n") or text == "thought"
    ):
        # The engine opens the channel it sees closed (or a bare ``thought``) but never opened,
        # with or without a reasoning parser.
        text = CHANNEL_START + text

    before: list[str] = []
    after: list[str] = []
    calls: list[list[str]] = []  # [name, args]
    state = "content"
    i, n = 0, len(text)
    while i < n:
        hit = next((lit for lit in lits if text.startswith(lit, i)), None)
        if hit is not None and hit in drops:
            i += len(hit)
            continue
        if state == "content" or state == "reasoning":
            if hit == CALL_START:
                state = "preamble"
                if not suppress:
                    calls.append(["", ""])
            elif hit == CHANNEL_START:
                state = "reasoning"
            elif hit == CHANNEL_END:
                state = "content"
            elif hit is None and state == "content":
                (after if calls else before).append(text[i])
            elif hit == CALL_END and state == "reasoning":
                pass
            i += len(hit) if hit else 1
            continue
        if hit == CALL_END:
            state = "content"
            i += len(hit)
            continue
        if state == "preamble":
            if text.startswith("call:", i):
                state, i = "name", i + len("call:")
                continue
            if text[i] == ":":
                state = "name"
            i += len(hit) if hit else 1
            continue
        piece = hit or text[i]
        if state == "name" and piece in "{(":
            state, i = "args", i + 1
            continue
        if calls:
            calls[-1][0 if state == "name" else 1] += piece
        i += len(piece)

    found: list[tuple[str, str]] = []
    announced = False
    for name, args in calls:
        announced = announced or bool(name) or bool(
            not name and (m := NAME_IN_JSON.search(args)) and m.group(1)
        )
        name = name.strip()
        if not name and args.strip():
            name, args_json = name_and_args_from_json(args)
        elif args.strip():
            args_json = arguments_json(args)
        else:
            args_json = "{}"
        if name:
            found.append((name, fix_arg_types(args_json, name, ctx.tools)))
    content = "".join(before)
    if not announced:
        content += "".join(after)
    if found:
        content = content.strip()
    elif calls and not content.strip():
        content = ""
    if ctx.tool_choice == "none":
        return Extraction(content or None, [])
    return Extraction(content or None, found)


class Gemma4ToolParser(HeldCallsParser):
    """vLLM's ``gemma4`` (engine) tool-call format."""

    family = JsonFamily("gemma4", extract_gemma4)
    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True


tool_parser("gemma4", "gemma-4", family="gemma4")(Gemma4ToolParser)
Gemma4ToolParser.incremental = Gemma4StreamedCalls
Gemma4StreamedCalls.name = "gemma4"


_THOUGHT_LABEL = "thought\n"
_GEMMA4_TURN_BOUNDARIES = ("<|turn>", "<|tool_response>")

GEMMA4 = MarkerFormat(
    start=(CHANNEL_START,),
    end=(CHANNEL_END,),
    implicit_end=(CALL_START,),
    tool_close=(CALL_END,),
    content_drops=(CALL_END,),
    literals=("call:", ":", "{", "(", QUOTE),
    starts_in_reasoning=False,
    reopen=True,
)


class Gemma4State(ParserState):
    base: EngineState
    pending: str | None  # output held until a ``<|channel>`` settles the opener question
    label: str  # reasoning that may still be the ``thought\\n`` label
    label_done: bool


@reasoning_parser("gemma4", family="gemma4")
class Gemma4ReasoningParser(MarkerEngineParser):
    """Gemma-4 ``<|channel>thought\\n…<channel|>`` reasoning (vLLM's Gemma4 engine)."""

    fmt = GEMMA4
    name = "gemma4"
    State = Gemma4State

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        vocab = ctx.vocab
        # vLLM injects the opener only when the tokenizer knows both channel tokens.
        self.can_inject = vocab is None or (
            token_id(vocab, CHANNEL_START) is not None
            and token_id(vocab, CHANNEL_END) is not None
        )
        self.pending: str | None = ""  # None once the opener question is settled
        self.label = ""  # reasoning held while it may still be the ``thought\n`` label
        self.label_done = False

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """The engine's check: thinking (``enable_thinking``, default off) waits for an end."""
        vocab = ctx.vocab
        wait = ENABLE_THINKING_DEFAULT_OFF.of(ctx)
        end_ids = {token_id(vocab, m) for m in (CHANNEL_END, "<|tool_call>")} - {None}
        if token_id(vocab, CHANNEL_END) is None:
            end_ids = set()
        start = token_id(vocab, CHANNEL_START)
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
            if CHANNEL_START not in self.pending:
                return "", ""
            text, self.pending = self.pending, None
        return self._engine(text, False)

    def finish(self) -> tuple[str, str]:
        text = ""
        if self.pending is not None:
            text, self.pending = self.pending, None
            if self.can_inject and (
                CHANNEL_END in text
                or text.startswith(_THOUGHT_LABEL)
                or text == _THOUGHT_LABEL.rstrip()
            ):
                text = CHANNEL_START + text
        return self._engine(text, True)
