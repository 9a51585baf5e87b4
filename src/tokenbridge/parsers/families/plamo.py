"""PLaMo-3: ``<|plamo:…|>`` markers for reasoning and for blocks of tool requests, each a name and
a JSON arguments section; ``<|plamo:tag|>`` (end of turn) closes anything. The reasoning markers
exist only while thinking is on (``enable_thinking``, default on), and a truncated ``<|plamo:``
marker at the end of content, a name or the arguments is cut off.
"""

from __future__ import annotations

from dataclasses import replace

from tokenbridge.parsers.base import ParseContext, ParserState
from tokenbridge.parsers.engine.lexer import token_id
from tokenbridge.parsers.engine.reasoning import EngineState, MarkerEngineParser, MarkerFormat
from tokenbridge.parsers.engine.tag_stream import streamed_tag_parser
from tokenbridge.parsers.engine.tags import (
    ARGS, BETWEEN, CALL_END, CALL_START, CONTENT, NAME, PREAMBLE, REASONING, REASONING_END, REASONING_START,
    Family, Transitions, family_parser, to,
)
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_ON
from tokenbridge.parsers.registry import reasoning_parser, tool_parser


_PLAMO = "<|plamo:"


_PLAMO_THINK = ("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>")


def plamo3_family(thinking: bool) -> Family:
    """``<|plamo:begin_tool_requests:plamo|>`` blocks of requests, each a name and a JSON
    arguments section; ``<|plamo:tag|>`` (end of turn) closes anything. The reasoning
    markers exist only while thinking is on (``enable_thinking``, default on)."""
    terms = {
        "REQUESTS_START": ("<|plamo:begin_tool_requests:plamo|>",),
        "REQUESTS_END": ("<|plamo:end_tool_requests:plamo|>",),
        "REQUEST_START": ("<|plamo:begin_tool_request:plamo|>",),
        "REQUEST_END": ("<|plamo:end_tool_request:plamo|>",),
        "NAME_START": ("<|plamo:begin_tool_name:plamo|>",),
        "NAME_END": ("<|plamo:end_tool_name:plamo|>",),
        "ARGS_START": ("<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",),
        "ARGS_END": ("<|plamo:end_tool_arguments:plamo|>",),
        "EOT": ("<|plamo:tag|>",),
    }
    trans: Transitions = {
        (CONTENT, "REQUESTS_START"): to(PREAMBLE),
        (PREAMBLE, "REQUEST_START"): to(PREAMBLE),
        (PREAMBLE, "NAME_START"): to(NAME, CALL_START),
        (NAME, "NAME_END"): to(PREAMBLE),
        (PREAMBLE, "ARGS_START"): to(ARGS),
        (ARGS, "ARGS_END"): to(BETWEEN),
        (BETWEEN, "REQUEST_END"): to(PREAMBLE, CALL_END),
        (PREAMBLE, "REQUESTS_END"): to(CONTENT),
        (REASONING, "EOT"): to(CONTENT, REASONING_END),
        **{(st, "EOT"): to(CONTENT) for st in (CONTENT, PREAMBLE, NAME, ARGS, BETWEEN)},
    }
    if thinking:
        terms.update({"THINK_START": (_PLAMO_THINK[0],), "THINK_END": (_PLAMO_THINK[1],)})
        trans.update({
            (REASONING, "THINK_START"): to(REASONING),
            (CONTENT, "THINK_START"): to(REASONING, REASONING_START),
            (REASONING, "THINK_END"): to(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): to(CONTENT),
            (REASONING, "REQUESTS_START"): to(PREAMBLE, REASONING_END),
        })
    return Family(
        name="plamo3",
        terminals=terms,
        transitions=trans,
        tool_args_json=True,
        raw_json_args=True,
        strip_content_with_tools=False,
        preserve_tokens=frozenset({"<|plamo:begin_", "<|plamo:end_", ":plamo|>"}),
        unfinished_marker=_PLAMO,
    )


_PLAMO3_THINKING, _PLAMO3_PLAIN = plamo3_family(True), plamo3_family(False)


Plamo3ToolParser = tool_parser("plamo3", family="plamo3")(
    family_parser(
        "Plamo3ToolParser",
        chooser=lambda ctx: _PLAMO3_THINKING if ENABLE_THINKING_DEFAULT_ON.of(ctx) else _PLAMO3_PLAIN,
    )
)


Plamo3ToolParser.incremental = streamed_tag_parser(Plamo3ToolParser, None)


_PLAMO_EOT = "<|plamo:tag|>"
_PLAMO_TOOL_OPEN = "<|plamo:begin_tool_requests:plamo|>"
_PLAMO_TOOL_CLOSE = "<|plamo:end_tool_requests:plamo|>"
_PLAMO_TOOL_LITERALS = (
    "<|plamo:begin_tool_request:plamo|>",
    "<|plamo:end_tool_request:plamo|>",
    "<|plamo:begin_tool_name:plamo|>",
    "<|plamo:end_tool_name:plamo|>",
    "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",
    "<|plamo:end_tool_arguments:plamo|>",
)
PLAMO3 = MarkerFormat(
    start=(_PLAMO_THINK[0],),
    end=(_PLAMO_THINK[1], _PLAMO_EOT),
    implicit_end=(_PLAMO_TOOL_OPEN,),
    tool_close=(_PLAMO_TOOL_CLOSE, _PLAMO_EOT),
    literals=_PLAMO_TOOL_LITERALS,
    thinking=ENABLE_THINKING_DEFAULT_ON,
    reopen=True,
    strip_trailing_whitespace=False,
    off_is_identity=False,
)
#: Thinking off: no reasoning markers in the grammar (they stay text); EOT is still swallowed.
PLAMO3_OFF = replace(
    PLAMO3, start=(), end=(_PLAMO_EOT,), literals=_PLAMO_TOOL_LITERALS + _PLAMO_THINK
)
_PLAMO_LITERALS = (_PLAMO_EOT, _PLAMO_TOOL_OPEN, _PLAMO_TOOL_CLOSE, *_PLAMO_THINK)
_PLAMO_LITERALS += _PLAMO_TOOL_LITERALS


class Plamo3State(ParserState):
    base: EngineState
    tail: str  # reasoning that may be a truncated marker at the very end


@reasoning_parser("plamo3", family="plamo3")
class Plamo3ReasoningParser(MarkerEngineParser):
    """PLaMo-3 ``<|plamo:begin_think:plamo|>`` reasoning (vLLM's Plamo3 engine)."""

    fmt = PLAMO3
    name = "plamo3"
    State = Plamo3State

    def __init__(self, ctx: ParseContext) -> None:
        if not PLAMO3.thinking.of(ctx):
            self.fmt = PLAMO3_OFF
        super().__init__(ctx)
        self.tail = ""  # reasoning that may be a truncated marker at the very end

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        if not PLAMO3.thinking.of(ctx):
            return True
        vocab = ctx.vocab
        start, end = (token_id(vocab, m) for m in _PLAMO_THINK)
        eot = token_id(vocab, _PLAMO_EOT)
        for t in reversed(prompt_token_ids):
            if t == end and end is not None:
                return True
            if t in (start, eot) and t is not None:
                return False
        return False

    def _cut_tail(self, r: str, final: bool) -> str:
        text = self.tail + r
        i = text.rfind(_PLAMO)
        if i == -1:
            self.tail = ""
            return text
        if any(len(m) > len(text) - i and m.startswith(text[i:]) for m in _PLAMO_LITERALS):
            self.tail = "" if final else text[i:]
            return text[:i]
        self.tail = ""
        return text

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        r, c = super().feed(text, token_ids)
        return self._cut_tail(r, False), c

    def finish(self) -> tuple[str, str]:
        r, c = super().finish()
        return self._cut_tail(r, True), c


# -- Mistral ----------------------------------------------------------------------------------

#: Mistral v13+: the output starts in content; ``[THINK]`` opens reasoning (again, also
#: inside it), ``[/THINK]`` closes it, ``[TOOL_CALLS]`` ends it and stays for the tool parser.
#: The prompt check still waits for a ``[/THINK]``.
