"""Poolside V1 tool calls, GLM-4 style: ``<tool_call>name\\n<arg_key>k</arg_key>
<arg_value>v</arg_value>…</tool_call>``.

vLLM 0.33 (``PoolsideV1ToolParser.extract_tool_calls``): every closed call whose name (up to a
newline or ``<``) parses is a call, others are skipped. Values of string-typed parameters stay
verbatim; others are stripped and read as JSON, then as a Python literal, else kept as text.
Content is the text before the first ``<tool_call>`` (null when blank); with no call it is the
whole text.

Reasoning: the DeepSeek-V3 switch (R1 rules when ``thinking``/``enable_thinking`` is on); the
prompt check stops at the ``<assistant>`` turn.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from tokenbridge.parsers.base import Delta, ParseContext, ParserState
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.reasoning import IdentityReasoningParser, SwitchedReasoningParser, closed_in_prompt
from tokenbridge.parsers.engine.thinking import EITHER_FLAG_DEFAULT_OFF
from tokenbridge.parsers.engine.arguments import StreamedArguments
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import Extraction, HeldBlockParser, as_content
from tokenbridge.parsers.engine.schema import function_tools

START = "<tool_call>"
_CALL = re.compile(r"<tool_call>.*?</tool_call>", re.S)
_DETAIL = re.compile(r"<tool_call>\s*([^\n<]+?)\s*\n?\s*(<arg_key>.*?)?</tool_call>", re.S)
_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.S)


def _deserialize(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


@tool_parser("poolside_v1", family="poolside_v1")
class PoolsideV1ToolParser(HeldBlockParser):
    """vLLM's ``poolside_v1`` tool-call format."""

    name = "poolside_v1"
    supports_required_and_named = False

    def stream_markers(self) -> tuple[str, ...]:
        return (START,)

    def _is_string(self, function: str, key: str) -> bool:
        for name, parameters in function_tools(self.ctx.tools):
            if name == function:
                if parameters is None:
                    return False
                return parameters.get("properties", {}).get(key, {}).get("type", None) == "string"
        return False

    def extract(self, text: str, at_start: bool) -> Extraction:
        calls = []
        try:
            for block in _CALL.findall(text):
                detail = _DETAIL.search(block)
                if detail is None:
                    continue
                name, args = detail.group(1).strip(), detail.group(2)
                values = {}
                for key, value in _PAIR.findall(args) if args else []:
                    key = key.strip()
                    values[key] = value if self._is_string(name, key) else _deserialize(value.strip())
                calls.append((name, dumps_args(values)))
        except Exception:
            return as_content(text)
        if not calls:
            return as_content(text)
        content = text[: text.find(START)]
        return Extraction(content if content.strip() else None, calls)


@reasoning_parser("poolside_v1", family="deepseek_v3")
class PoolsideV1ReasoningParser(SwitchedReasoningParser):
    """Poolside V1: the DeepSeek-V3 switch; the prompt check stops at the ``<assistant>`` turn."""

    name = "poolside_v1"
    thinking = EITHER_FLAG_DEFAULT_OFF

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        if cls._pick(ctx) is IdentityReasoningParser:
            return True
        return closed_in_prompt(prompt_token_ids, ctx.vocab, ("<think>", "<assistant>"), ("</think>",))



# Where the incremental parser is.
CONTENT, NAME, PAIRS, KEY, GAP, VALUE, SKIP, SKIP_BLOCK, BETWEEN = range(9)
END, KEY_OPEN, KEY_CLOSE, VALUE_OPEN, VALUE_CLOSE = "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"
_MAX_NAME = 4096


class PoolsideStreamedState(ParserState):
    where: int = CONTENT
    buf: str = ""  # undecided text: a partial marker, a name line
    held: str = ""  # the output from the first call marker while no call is open (content if none opens)
    index: int = -1  # the open call's index
    name: str = ""
    members: int = 0  # its arguments sent
    key: str = ""
    value: str = ""  # a value the schema does not keep as text, held to its end
    streaming: bool = False  # the value is text and streams


class PoolsideV1StreamedCalls(StreamedArguments):
    """``poolside_v1`` for ``--tool-call-streaming incremental``: content streams up to the first
    ``<tool_call>``; a call opens when its name line is read; each ``<arg_key>`` pair follows
    when its key is read, a string-typed value streaming as written, any other held to its end
    and sent as the one-shot answer reads it. Until a call opens the text from the first marker
    is held (it is content if none opens); text outside the pairs is dropped, as in the one-shot
    answer.

    The documented answer where the stream cannot take back what it sent: a call left unclosed
    stands (the one-shot answer skips it), its open value closed if it streams; a value that
    reads as a Python literal with no JSON form is dropped (the one-shot answer is then all
    content).
    """

    name = "poolside_v1"
    supports_required_and_named = False
    State = PoolsideStreamedState
    _is_string = PoolsideV1ToolParser._is_string

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(PoolsideStreamedState())

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if self.index < 0 and self.where != CONTENT:
            self.held += text
        return super().feed(text, token_ids)

    def _step(self, buf: str, out: Delta) -> str:
        where = self.where
        if where in (CONTENT, BETWEEN, SKIP_BLOCK):
            at, _ = self._until(buf, (END,) if where == SKIP_BLOCK else (START,))
            if at < 0:
                if where == CONTENT:
                    out.content += buf[: len(buf) - len(self.buf)]
                return ""
            if where == SKIP_BLOCK:
                self.where = BETWEEN
                return buf[at + len(END):]
            if where == CONTENT:
                out.content += buf[:at]
                self.held = buf[at:]
            self.where = NAME
            return buf[at + len(START):]
        if where == NAME:
            return self._name(buf, out)
        if where in (PAIRS, GAP, SKIP):
            at, marker = self._until(buf, (VALUE_OPEN, END) if where == GAP else (KEY_OPEN, END))
            if where == GAP and (buf[:at] if marker else buf[: len(buf) - len(self.buf)]).strip():
                self.where, self.buf = SKIP, ""  # not a pair: the one-shot pattern reads on to the next key
                return buf
            if marker is None:
                return ""
            if marker == END:
                self._end_call(out)
                return buf[at + len(END):]
            if marker == KEY_OPEN:
                self.where, self.key = KEY, ""
            else:
                self.where = VALUE
                self._begin_value(self.key, self._is_string(self.name, self.key), out)
            return buf[at + len(marker):]
        if where == KEY:
            at, marker = self._until(buf, (KEY_CLOSE,))
            if marker is None:
                self.key += buf[: len(buf) - len(self.buf)]
                return ""
            self.key, self.where = (self.key + buf[:at]).strip(), GAP
            return buf[at + len(KEY_CLOSE):]
        at, marker = self._until(buf, (VALUE_CLOSE, END))  # VALUE
        self._value_text(buf[:at] if marker else buf[: len(buf) - len(self.buf)], out)
        if marker is None:
            return ""
        if marker == END:
            self._end_call(out)
            return buf[at + len(END):]
        self._end_value(out)
        self.where = PAIRS
        return buf[at + len(VALUE_CLOSE):]

    def _name(self, buf: str, out: Delta) -> str:
        """The name runs to a newline or ``<``; then, after space, a pair or the call's end."""
        s = buf.lstrip()
        cut = min((i for i in (s.find("\n"), s.find("<")) if i >= 0), default=len(s))
        rest = s[cut:].lstrip()
        if not rest.startswith((KEY_OPEN, END)) and any(m.startswith(rest) for m in (KEY_OPEN, END)):
            if len(buf) > _MAX_NAME:
                self.where = SKIP_BLOCK
                return buf
            self.buf = buf
            return ""
        if not rest.startswith((KEY_OPEN, END)):
            self.where = SKIP_BLOCK
            return rest
        self.name, self.where, self.held = s[:cut].strip(), PAIRS, ""
        self._open_call(self.name, out)
        return rest

    def _converted(self, raw: str) -> str | None:
        try:
            return dumps_args(_deserialize(raw.strip()))
        except (TypeError, ValueError, RecursionError, MemoryError):
            return None

    def _end_call(self, out: Delta) -> None:
        self._close_call(self.where == VALUE, out)
        self.where = BETWEEN

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == CONTENT:
            out.content = self.buf
        elif self.index < 0:
            out.content = self.held
        elif self.where in (PAIRS, KEY, GAP, VALUE, SKIP):
            self._end_call(out)
        self.where, self.buf, self.held = BETWEEN, "", ""
        return out


PoolsideV1ToolParser.incremental = PoolsideV1StreamedCalls
