"""MiniMax-M2 and MiniMax-M3: ``<invoke name="…">`` calls inside a tool block, and their reasoning.

M2 reasons in ``<think>`` (always on) and writes ``<parameter name=…>`` values; M3 namespaces every
structural tag with ``]<]minimax[>[``, nests its parameter elements (read against the tool's
schema, ``families/minimax_m3.py``) and reasons in ``<mm:think>``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar

import msgspec

from tokenbridge.parsers.base import ParseContext, ParserState, ReasoningParser
from tokenbridge.parsers.engine.lexer import partial_suffix, token_id
from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, register_format
from tokenbridge.parsers.engine.tag_stream import MINIMAX_PARAMS, streamed_tag_parser
from tokenbridge.parsers.engine.tags import (
    ARG, ARGS, BETWEEN, CALL_END, CALL_START, CONTENT, NAME, PREAMBLE, REASONING, REASONING_END, Family,
    Transitions, family_parser, to,
)
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.families.minimax_m3 import MINIMAX_M3_NS, M3StreamedArgs, minimax_m3_args


_MINIMAX_PARAM_NAME = (
    r"<\s*parameter\s+name\s*=\s*"
    r"(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^>\s]+))\s*>"
)


_MINIMAX_PARAM = re.compile(
    _MINIMAX_PARAM_NAME + r"(?P<value>.*?)(?:<\s*/\s*parameter\s*>|(?=<\s*parameter\s+name\s*=))",
    re.S,
)


_MINIMAX_PARTIAL = re.compile(_MINIMAX_PARAM_NAME + r"(?P<value>.*)$", re.S)


def _minimax_param_name(m: re.Match) -> str:
    return (m.group("dq") or m.group("sq") or m.group("bare") or "").strip()


def minimax_m2_params(raw: str, partial: bool) -> str:
    """``<parameter name="k">v</parameter>`` (name quoted either way or bare); values are
    inline, so they are kept byte for byte; nameless parameters are skipped."""
    params: dict[str, Any] = {}
    for m in _MINIMAX_PARAM.finditer(raw):
        if _minimax_param_name(m):
            params[_minimax_param_name(m)] = m.group("value")
    if partial:
        m = _MINIMAX_PARTIAL.search(_MINIMAX_PARAM.sub("", raw))
        if m and _minimax_param_name(m):
            params[_minimax_param_name(m)] = m.group("value")
    return json.dumps(params, ensure_ascii=False)


def _invoke_family(
    name: str, ns: str, tool: tuple[str, str], think: tuple[str, str] | None, **flags: Any
) -> Family:
    """MiniMax ``<invoke name="NAME">…</invoke>`` calls inside a tool block; every structural
    tag carries the ``ns`` prefix (empty for M2). M2 also opens a call outside a block and
    swallows a stray block closer; M3's block closer ends the message (later text is dropped)."""
    invokes = ("INVOKE_DQ", "INVOKE_SQ", "INVOKE_BARE")
    m2 = think is not None
    terminals: dict[str, tuple[str, ...]] = {
        "TOOL_START": (tool[0],), "TOOL_END": (tool[1],),
        "INVOKE_DQ": (f'{ns}<invoke name="',), "INVOKE_SQ": (f"{ns}<invoke name='",),
        "INVOKE_BARE": (f"{ns}<invoke name=",), "INVOKE_END": (f"{ns}</invoke>",),
        "NAME_END_DQ": ('">',), "NAME_END_SQ": ("'>",), "NAME_END_BARE": (">",),
    }
    transitions: Transitions = {
        (CONTENT, "TOOL_START"): to(PREAMBLE),
        (ARGS, "INVOKE_END"): to(BETWEEN, CALL_END),
        **{(st, inv): to(NAME, CALL_START) for st in (PREAMBLE, BETWEEN) for inv in invokes},
        **{(NAME, end): to(ARGS) for end in ("NAME_END_DQ", "NAME_END_SQ", "NAME_END_BARE")},
    }
    if m2:
        terminals.update({
            "THINK_START": (think[0],), "THINK_END": (think[1],),
            "PARAM_START": ("<parameter name=",), "PARAM_END": ("</parameter>",),
        })
        transitions.update({
            (REASONING, "THINK_START"): to(REASONING),
            (REASONING, "THINK_END"): to(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): to(CONTENT),
            (REASONING, "TOOL_START"): to(PREAMBLE, REASONING_END),
            (ARGS, "PARAM_START"): to(ARGS, ARG),
            (ARGS, "PARAM_END"): to(ARGS, ARG),
            (PREAMBLE, "TOOL_END"): to(CONTENT),
            (BETWEEN, "TOOL_END"): to(CONTENT),
            (CONTENT, "TOOL_END"): to(CONTENT),
            **{(CONTENT, inv): to(NAME, CALL_START) for inv in invokes},
        })
    else:
        transitions.update({
            (PREAMBLE, "TOOL_END"): to(BETWEEN),
            (BETWEEN, "TOOL_END"): to(BETWEEN),
        })
    return Family(name=name, terminals=terminals, transitions=transitions, tool_args_json=False, **flags)


MinimaxM2ToolParser = tool_parser("minimax_m2", "minimax-m2", "minimax", family="minimax_m2")(
    family_parser(
        "MinimaxM2ToolParser",
        _invoke_family(
            "minimax_m2", "", ("<minimax:tool_call>", "</minimax:tool_call>"),
            ("<think>", "</think>"), arg_converter=minimax_m2_params, validate_tool_names=True,
        ),
    )
)


MinimaxM2ToolParser.incremental = streamed_tag_parser(MinimaxM2ToolParser, MINIMAX_PARAMS)


MinimaxM3ToolParser = tool_parser("minimax_m3", "minimax-m3", family="minimax_m3")(
    family_parser(
        "MinimaxM3ToolParser",
        _invoke_family(
            "minimax_m3", MINIMAX_M3_NS,
            (f"{MINIMAX_M3_NS}<tool_call>", f"{MINIMAX_M3_NS}</tool_call>"), None,
            schema_arg_converter=minimax_m3_args, strip_content_with_tools=False,
        ),
    )
)


MinimaxM3ToolParser.incremental = streamed_tag_parser(MinimaxM3ToolParser, None, M3StreamedArgs)


_MINIMAX_TOOL_CLOSE = "</minimax:tool_call>"


#: MiniMax-M2: always thinking; ``<minimax:tool_call>`` ends reasoning, a stray closer in
#: content is swallowed, ``<invoke name=…`` in content opens a (skipped) tool span.
MINIMAX_M2 = MarkerFormat(
    implicit_end=("<minimax:tool_call>",),
    tool_open=('<invoke name="', "<invoke name='", "<invoke name="),
    tool_close=(_MINIMAX_TOOL_CLOSE,),
    content_drops=(_MINIMAX_TOOL_CLOSE,),
    literals=("<parameter name=", "</parameter>", "</invoke>", '">', "'>", ">"),
)


class AppendThinkState(ParserState):
    started: bool  # the ``<think>`` was given back
    bare_in_v2 = True


@reasoning_parser("minimax_m2_append_think", "minimax-append-think", family="minimax_m2")
class MiniMaxM2AppendThinkReasoningParser(ReasoningParser):
    """MiniMax-M2 "append think": no split; the content gets back the ``<think>`` the prompt ate."""

    name = "minimax_m2_append_think"
    State = AppendThinkState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.started = False

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = token_id(ctx.vocab, "<think>"), token_id(ctx.vocab, "</think>")
        for t in reversed(prompt_token_ids):
            if t == end or t == start:
                return t == end
        return False

    def _prefix(self) -> str:
        if self.started:
            return ""
        self.started = True
        return "<think>"

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        return "", self._prefix() + text

    def finish(self) -> tuple[str, str]:
        return "", self._prefix()

register_format(MarkerEngineParser, MINIMAX_M2, "minimax_m2", "minimax", family="minimax_m2")


_M3_THINK_START, _M3_THINK_END = "<mm:think>", "</mm:think>"


class MiniMaxM3State(ParserState):
    state: Annotated[int, msgspec.Meta(ge=0, le=3)]  # _PRE, _BEFORE, _REASONING, _AFTER
    buf: str
    seen_start: bool


@reasoning_parser("minimax_m3", "minimax-m3", family="minimax_m3")
class MiniMaxM3ReasoningParser(ReasoningParser):
    name = "minimax_m3"
    State = MiniMaxM3State
    START_WINDOW: ClassVar[int] = 64
    _PRE, _BEFORE, _REASONING, _AFTER = range(4)

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.prefilled = ctx.kwarg("thinking_mode") == "enabled"
        self.state = self._PRE
        self.buf = ""
        self.seen_start = False

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """The last ``</mm:think>`` comes after the last ``<mm:think>`` (single-token markers)."""
        start, end = token_id(ctx.vocab, _M3_THINK_START), token_id(ctx.vocab, _M3_THINK_END)
        for t in reversed(prompt_token_ids):
            if t == end and end is not None:
                return True
            if t == start and start is not None:
                return False
        return False

    def _decide(self, final: bool) -> bool:
        """Leave ``_PRE`` once the beginning of the output settles the rule."""
        buf = self.buf
        if not self.prefilled:
            if buf.startswith(_M3_THINK_END):
                self.buf, self.state = buf[len(_M3_THINK_END) :], self._AFTER
                return True
            if _M3_THINK_END.startswith(buf) and not final:
                return False
            self.state = self._BEFORE
            return True
        i = buf.find(_M3_THINK_START, 0, self.START_WINDOW + len(_M3_THINK_START))
        if i != -1:
            self.state = self._BEFORE
            return True
        if final or len(buf) >= self.START_WINDOW + len(_M3_THINK_START):
            self.state = self._REASONING
            return True
        return False

    def _run(self, final: bool) -> tuple[str, str]:
        r, c = [], []
        if self.state == self._PRE and not self._decide(final):
            return "", ""
        while True:
            buf = self.buf
            if self.state == self._AFTER:
                c.append(buf)
                self.buf = ""
                break
            marker = _M3_THINK_START if self.state == self._BEFORE else _M3_THINK_END
            out = c if self.state == self._BEFORE else r
            i = buf.find(marker)
            if i == -1:
                keep = 0 if final else partial_suffix(buf, (marker,))
                out.append(buf[: len(buf) - keep])
                self.buf = buf[len(buf) - keep :]
                break
            out.append(buf[:i])
            self.buf = buf[i + len(marker) :]
            if self.state == self._BEFORE:
                self.state, self.seen_start = self._REASONING, True
            else:
                self.state = self._AFTER
        return "".join(r), "".join(c)

    def _empties(self) -> None:
        # vLLM: no block at all gives the output itself as content ("" kept); a block gives
        # its reasoning even when empty, and content only when non-empty.
        if self.seen_start or self.prefilled:
            self.empty_reasoning, self.empty_content = "", None
        else:
            self.empty_reasoning = None
            self.empty_content = None if self.state == self._AFTER else ""

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        self.buf += text
        return self._run(False)

    def finish(self) -> tuple[str, str]:
        out = self._run(True)
        self._empties()
        return out

