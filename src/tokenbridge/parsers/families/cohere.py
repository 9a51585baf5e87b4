"""Cohere Command 3 (Command A, R7B) and Command 4: special-token modes and JSON action blocks.

    <|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "search", "parameters": {"query": "x"}}
    ]<|END_ACTION|>
    <|START_RESPONSE|>The answer <co>cited</co: 0:[1]>.<|END_RESPONSE|>

vLLM 0.33 hands the whole output to Cohere's ``cohere_melody`` filter (presets ``cmd3`` and
``cmd4``); this module reproduces that filter's one-shot answer, checked against it:

* every special token switches a mode, wherever it appears: the response/text openers and
  ``<|END_THINKING|>`` to content, ``<|START_THINKING|>`` to reasoning, ``<|START_ACTION|>``
  to an action block, the end markers to "ignore" (the text is dropped). Command 3 starts in
  content, Command 4 in reasoning (its prompt opens the thinking); Command 4 also knows
  ``<|START_TEXT|>``/``<|END_TEXT|>``. Unfinished markers at the end stay text;
* each stretch of text between two markers loses its trailing whitespace; in it, citations
  ``<co>…</co: …>`` are unwrapped (a citation still open when the stretch ends loses its
  unfinished closing tag);
* an action block is read as melody reads it, by keys in order rather than as JSON: the next
  ``"tool_call_id": "`` starts a call, its value up to an unescaped quote is the id, then
  ``"tool_name": "`` and its value, then the raw ``"parameters"`` object (only when it holds
  at least one key; its text up to where it first parses as JSON, up to 8 leading blanks per
  line removed, or the rest of the block when it never does). A block ending in a backslash
  yields nothing. Ids are kept (vLLM uses them as the calls' ids).

The block reader is ``engine.melody_actions`` (one-shot, and as the block arrives for
``--tool-call-streaming incremental``). With a reasoning parser in front (it removes the
thinking), parsing starts in content.
Without one, reasoning-mode text is reported as reasoning, as vLLM's unified parser does.

Cohere Command 3 and Command 4: reasoning is the melody filter's reasoning mode.

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

from typing import Annotated, ClassVar, Literal

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix
from tokenbridge.parsers.engine.melody_actions import ActionState, ActionStream, read_actions
import msgspec
from tokenbridge.parsers.base import ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser


CONTENT, REASONING, ACTION, IGNORE = "content", "reasoning", "action", "ignore"

COMMAND3_MODES = {
    "<|START_RESPONSE|>": CONTENT,
    "<|END_RESPONSE|>": IGNORE,
    "<|START_THINKING|>": REASONING,
    "<|END_THINKING|>": CONTENT,
    "<|START_ACTION|>": ACTION,
    "<|END_ACTION|>": IGNORE,
}
COMMAND4_MODES = {**COMMAND3_MODES, "<|START_TEXT|>": CONTENT, "<|END_TEXT|>": IGNORE}

CITE_OPEN, CITE_CLOSE = "<co>", "</co: "

def unwrap_citations(text: str, in_cite: bool, final: bool) -> tuple[str, int, bool]:
    """Citation tags removed from ``text``: the output, how much of ``text`` was read, and
    whether a citation is open after it. Unless ``final``, a possibly partial tag is left
    unread; when ``final``, an open citation's unfinished closing tag is dropped."""
    out, pos = [], 0
    while pos < len(text):
        if not in_cite:
            i = text.find(CITE_OPEN, pos)
            if i == -1:
                keep = 0 if final else partial_suffix(text[pos:], (CITE_OPEN,))
                out.append(text[pos:len(text) - keep])
                return "".join(out), len(text) - keep, False
            out.append(text[pos:i])
            pos, in_cite = i + len(CITE_OPEN), True
            continue
        i = text.find(CITE_CLOSE, pos)
        if i == -1:
            keep = partial_suffix(text[pos:], (CITE_CLOSE,))
            out.append(text[pos:len(text) - keep])
            return "".join(out), len(text) if final else len(text) - keep, True
        out.append(text[pos:i])
        j = text.find(">", i + len(CITE_CLOSE))
        if j == -1:
            return "".join(out), len(text) if final else i, True
        pos, in_cite = j + 1, False
    return "".join(out), pos, in_cite


Mode = Literal["content", "reasoning", "action", "ignore"]


class CohereState(ParserState):
    mode: Mode
    buf: str  # text after the last marker that may still hold a partial marker
    stretch: str  # unread text of the current stretch (trailing blanks, partial tags)
    in_cite: bool
    index: Annotated[int, msgspec.Meta(ge=0)]


class CohereToolParser(ToolParser):
    """Streams content (and, with no reasoning parser, reasoning) as its stretches are
    decided; holds each action block until its end marker or ``finish()``.

    ``supports_required_and_named`` is False and ``engine_based`` True: vLLM runs the melody
    filter for every ``tool_choice`` (under "none" the calls are dropped, the action text
    stays out of content). Blank content is kept as it is.
    """

    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True
    blank_content_is_null: ClassVar[bool] = False
    modes: ClassVar[dict[str, str]] = COMMAND3_MODES
    initial_mode: ClassVar[str] = CONTENT
    State = CohereState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(CohereState(CONTENT if ctx.reasoning_parser else self.initial_mode, "", "", False, 0))

    def _text(self, text: str, out: Delta, ends: bool) -> None:
        if self.mode == IGNORE:
            return
        self.stretch += text
        if self.mode == ACTION:
            if ends:
                for call_id, name, args in read_actions(self.stretch):
                    out.tool_calls.append(ToolCallDelta(self.index, name=name, arguments=args, id=call_id or None))
                    self.index += 1
                self.stretch = ""
            return
        body = self.stretch.rstrip() if ends else self.stretch
        readable = body if ends else body[:len(body.rstrip())]
        shown, read, self.in_cite = unwrap_citations(readable, self.in_cite, ends)
        self.stretch = "" if ends else self.stretch[read:]
        if ends:
            self.in_cite = False
        if shown:
            if self.mode == CONTENT:
                out.content += shown
            else:
                out.reasoning += shown

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta()
        self.buf += text
        while True:
            pos, marker = find_first(self.buf, self.modes)
            if marker is None:
                keep = partial_suffix(self.buf, self.modes)
                self._text(self.buf[:len(self.buf) - keep], out, False)
                self.buf = self.buf[len(self.buf) - keep:]
                return out
            self._text(self.buf[:pos], out, True)
            self.mode = self.modes[marker]
            self.buf = self.buf[pos + len(marker):]

    def finish(self) -> Delta:
        out = Delta()
        self._text(self.buf, out, True)
        self.buf = ""
        return out



@tool_parser("cohere_command3", "cohere", family="cohere")
class Command3ToolParser(CohereToolParser):
    """Command A / R7B (melody preset ``cmd3``); SMG calls it ``cohere``."""


@tool_parser("cohere_command4", family="cohere")
class Command4ToolParser(CohereToolParser):
    """Command 4 (melody preset ``cmd4``): starts in reasoning, knows ``<|START_TEXT|>``."""

    modes = COMMAND4_MODES
    initial_mode = REASONING


class CohereStreamedState(CohereState):
    action: ActionState | None = None  # the action block being read


class CohereStreamedCalls(CohereToolParser):
    """The melody filter for ``--tool-call-streaming incremental``: action blocks are read by
    ``ActionStream`` as they arrive. A block ending in a backslash, which melody reads as no
    call at all, is a known gap (its calls were sent)."""

    streams_arguments = True
    State = CohereStreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._action: ActionStream | None = None

    def snapshot(self) -> CohereStreamedState:
        self.action = None if self._action is None else self._action.snapshot()
        return super().snapshot()

    def load(self, state: CohereStreamedState) -> None:
        super().load(state)
        self._action = None
        if getattr(state, "action", None) is not None:
            self._action = ActionStream(self.index)
            self._action.load(state.action)

    def _text(self, text: str, out: Delta, ends: bool) -> None:
        if self.mode != ACTION:
            super()._text(text, out, ends)
            return
        if self._action is None:
            self._action = ActionStream(self.index)
        self._action.feed(text, out.tool_calls)
        if ends:
            self.index, self._action = self._action.end(out.tool_calls), None


Command3ToolParser.incremental = type("Command3StreamedCalls", (CohereStreamedCalls, Command3ToolParser), {})
Command4ToolParser.incremental = type("Command4StreamedCalls", (CohereStreamedCalls, Command4ToolParser), {})


START_THINKING, END_THINKING, CHATBOT = "<|START_THINKING|>", "<|END_THINKING|>", "<|CHATBOT_TOKEN|>"


class CohereReasoningState(ParserState):
    filter: CohereState  # the whole melody filter's
    mode: Mode  # where the text outside reasoning is, when a tool parser reads it
    buf: str


class CohereReasoningParser(ReasoningParser):
    engine_based: ClassVar[bool] = True
    melody: ClassVar[type[CohereToolParser]] = Command3ToolParser
    State = CohereReasoningState

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


@reasoning_parser("cohere_command3", "cohere_cmd", family="cohere")
class Command3ReasoningParser(CohereReasoningParser):
    """Command A / R7B (melody preset ``cmd3``); SMG calls it ``cohere_cmd``."""


@reasoning_parser("cohere_command4", family="cohere")
class Command4ReasoningParser(CohereReasoningParser):
    """Command 4 (melody preset ``cmd4``): the output starts in reasoning."""

    melody = Command4ToolParser
