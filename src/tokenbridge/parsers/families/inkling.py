"""Inkling's typed blocks: ``<|message_model|><|content_thinking|>…<|end_message|>``.

Every marker is a special token; a block's kind follows the message header. vLLM runs its
Inkling engine with tool parsing skipped, which gives:

* The output starts in a message header. Header text is held: it becomes content when the
  header is closed by ``<|end_message|>``/``<|content_model_end_sampling|>`` or the output
  ends, and is discarded when a block kind (or another header) follows.
* ``<|content_thinking|>`` opens reasoning; ``<|end_message|>`` or end-sampling closes it.
  In reasoning, other block markers are plain text.
* ``<|content_text|>``, ``<|content_invoke_tool_text|>``, ``<|content_tool_error|>`` switch
  to content and vanish; a stray closer in content vanishes.
* ``<|content_invoke_tool_json|>`` ends reasoning and stays in the content for the tool
  parser, together with the closer of that call.
* Other special tokens of the tokenizer vanish; trailing whitespace of the whole reasoning
  goes (whitespace ending one thinking block is kept when another block follows).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from tokenbridge.parsers.base import ParseContext, ParserState, ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.lexer import partial_suffix, special_token_texts
from tokenbridge.parsers.engine.json import json_member_object
from tokenbridge.parsers.engine.reasoning import closed_in_prompt
from tokenbridge.parsers.engine.tag_stream import StreamedTagBody, streamed_tag_parser
from tokenbridge.parsers.engine.tags import (
    ARGS,
    CALL_END,
    CALL_START,
    CONTENT,
    HEADER,
    REASONING,
    REASONING_END,
    REASONING_START,
    TEXT,
    Family,
    Transitions,
    family_parser,
    to,
)

MESSAGE_MODEL = "<|message_model|>"
CONTENT_TEXT = "<|content_text|>"
CONTENT_THINKING = "<|content_thinking|>"
TOOL_JSON = "<|content_invoke_tool_json|>"
TOOL_TEXT = "<|content_invoke_tool_text|>"
TOOL_ERROR = "<|content_tool_error|>"
END_SAMPLING = "<|content_model_end_sampling|>"
END_MESSAGE = "<|end_message|>"
MARKERS = (
    MESSAGE_MODEL, CONTENT_TEXT, CONTENT_THINKING, TOOL_JSON, TOOL_TEXT, TOOL_ERROR,
    END_SAMPLING, END_MESSAGE,
)
_CLOSERS = (END_MESSAGE, END_SAMPLING)
_TO_CONTENT = (CONTENT_TEXT, TOOL_TEXT, TOOL_ERROR)

_HEADER, _CONTENT, _REASONING = range(3)


class InklingState(ParserState):
    state: Annotated[int, msgspec.Meta(ge=_HEADER, le=_REASONING)]
    buf: str
    header: str
    held_ws: str
    in_call: bool


@reasoning_parser("inkling", family="inkling")
class InklingReasoningParser(ReasoningParser):
    name = "inkling"
    State = InklingState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.state = _HEADER
        self.buf = ""  # undecided text (a possible partial marker)
        self.header = ""  # header text, emitted or dropped later
        self.held_ws = ""  # trailing whitespace of the reasoning so far
        self.in_call = False  # inside a forwarded tool-call block
        self.drops = tuple(special_token_texts(ctx.vocab, MARKERS))
        self.markers = MARKERS + self.drops

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """The last thinking/header token keeps reasoning open, a text/end-sampling one ends it."""
        return closed_in_prompt(prompt_token_ids, ctx.vocab, (CONTENT_THINKING, MESSAGE_MODEL), (CONTENT_TEXT, END_SAMPLING))

    def _text(self, text: str, r: list[str], c: list[str]) -> None:
        if not text:
            return
        if self.state == _HEADER:
            self.header += text
        elif self.state == _CONTENT:
            c.append(text)
        else:
            text = self.held_ws + text
            kept = text.rstrip()
            self.held_ws = text[len(kept) :]
            if kept:
                r.append(kept)

    def _marker(self, m: str, r: list[str], c: list[str]) -> None:
        state = self.state
        if m in self.drops:
            return
        if m == TOOL_JSON:
            self.in_call, self.header = True, ""
            self.state = _CONTENT
            c.append(m)
        elif m in _CLOSERS:
            if self.in_call:
                # The call's closer is forwarded as content; a header it cuts is dropped.
                self.in_call = False
                if state == _HEADER or (state == _REASONING and m == END_SAMPLING):
                    self.header = ""
                    self.state = _CONTENT
                self._text(m, r, c)
                return
            if state == _HEADER:
                c.append(self.header)
                self.header = ""
            self.state = _CONTENT
        elif state == _REASONING:
            if m != CONTENT_THINKING:
                self._text(m, r, c)
        else:
            self.header = ""
            if m == MESSAGE_MODEL:
                self.state = _HEADER
            elif m == CONTENT_THINKING:
                self.state = _REASONING
            else:
                self.state = _CONTENT

    def _run(self, final: bool) -> tuple[str, str]:
        r: list[str] = []
        c: list[str] = []
        buf, pos = self.buf, 0
        while True:
            best, at = None, -1
            for m in self.markers:
                i = buf.find(m, pos)
                if i != -1 and (at == -1 or i < at or (i == at and len(m) > len(best))):
                    best, at = m, i
            if best is None:
                break
            self._text(buf[pos:at], r, c)
            self._marker(best, r, c)
            pos = at + len(best)
        rest = buf[pos:]
        keep = 0 if final else partial_suffix(rest, self.markers)
        self._text(rest[: len(rest) - keep], r, c)
        self.buf = rest[len(rest) - keep :]
        if final:
            if self.state == _HEADER:
                c.append(self.header)
                self.header = ""
            self.held_ws = ""
        return "".join(r), "".join(c)

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        self.buf += text
        return self._run(False)

    def finish(self) -> tuple[str, str]:
        return self._run(True)



def inkling_args(raw: str, partial: bool) -> str:
    """The ``args`` member of the ``{"name": …, "args": {…}}`` body, verbatim (an unclosed
    object runs to the end); ``{}`` without one. A non-object ``args`` is a ValueError."""
    span = json_member_object(raw, "args")
    if span is not None:
        return span
    return "" if partial else "{}"


def inkling_family() -> Family:
    """Typed blocks ``<|message_model|>[header]<|content_KIND|>…<|end_message|>``; a tool block
    (``content_invoke_tool_json``) holds ``{"name": …, "args": {…}}``. Thinking blocks are
    not content, raw/error tool blocks are; text after tool blocks stays content."""
    ends = ("END_MESSAGE", "END_SAMPLING")
    openers_plain = ("TEXT_START", "TOOL_TEXT", "TOOL_ERROR")
    trans: Transitions = {
        (CONTENT, "MSG_MODEL"): to(HEADER),
        (HEADER, "MSG_MODEL"): to(HEADER),
        (CONTENT, "THINK_START"): to(REASONING, REASONING_START),
        (HEADER, "THINK_START"): to(REASONING, REASONING_START),
        (REASONING, "THINK_START"): to(REASONING),
        **{(st, "TOOL_START"): to(ARGS, REASONING_END, CALL_START) for st in (CONTENT, HEADER, REASONING)},
        **{(st, op): to(CONTENT, REASONING_END) for st in (CONTENT, HEADER) for op in openers_plain},
        **{(CONTENT, end): to(CONTENT) for end in ends},
        (REASONING, "END_MESSAGE"): to(CONTENT),
        (REASONING, "END_SAMPLING"): to(CONTENT, REASONING_END),
        **{(ARGS, end): to(CONTENT, CALL_END) for end in ends},
        **{(HEADER, end): to(CONTENT, TEXT) for end in ends},
    }
    return Family(
        name="inkling",
        terminals={
            "MSG_MODEL": ("<|message_model|>",),
            "TEXT_START": ("<|content_text|>",),
            "THINK_START": ("<|content_thinking|>",),
            "END_MESSAGE": ("<|end_message|>",),
            "END_SAMPLING": ("<|content_model_end_sampling|>",),
            "TOOL_START": ("<|content_invoke_tool_json|>",),
            "TOOL_TEXT": ("<|content_invoke_tool_text|>",),
            "TOOL_ERROR": ("<|content_tool_error|>",),
        },
        transitions=trans,
        arg_converter=inkling_args,
        tool_args_json=True,
        strip_content_with_tools=False,
        json_args_keys=("args", "arguments", "parameters"),
        keep_text_after_calls=True,
    )


InklingToolParser = tool_parser("inkling", family="inkling")(
    family_parser("InklingToolParser", inkling_family())
)
InklingToolParser.incremental = streamed_tag_parser(InklingToolParser, None, StreamedTagBody)
