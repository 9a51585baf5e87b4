"""StepFun's Step-3, Step-3.5/3.7 and Step-5.

Step-3.5/3.7 and Step-5 write Qwen3-Coder's XML calls (``families.qwen``); Step-3.5 reasons like
Qwen3 but always thinks, Step-5 like DeepSeek-R1 (its reasoning name is an alias there).

Step-3 tool calls: a ``<｜tool_calls_begin｜>…<｜tool_calls_end｜>`` block of
``<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f"><steptml:parameter
name="k">v</steptml:parameter>…</steptml:invoke><｜tool_call_end｜>`` calls.

vLLM 0.33 (``Step3ToolParser.extract_tool_calls``): only a closed block counts; calls that are
not closed, not of type ``function`` or have no invoke name are skipped; parameter values are
stripped strings cast by the tool schema's plain ``type``. With calls, content is the text
around the block, ``strip()``-ed; with none, the whole text.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import replace
from typing import Any

from tokenbridge.parsers.base import Delta, ParseContext, ParserState
from tokenbridge.parsers.declare import RenderRules
from tokenbridge.parsers.engine.arguments import StreamedArguments
from tokenbridge.parsers.engine.held import Extraction, HeldBlockParser, as_content
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, MarkerPartitionParser, register_format
from tokenbridge.parsers.engine.schema import function_tools
from tokenbridge.parsers.engine.tag_stream import QWEN_PARAMS, streamed_tag_parser
from tokenbridge.parsers.engine.tags import family_parser
from tokenbridge.parsers.engine.thinking import ALWAYS_ON
from tokenbridge.parsers.families.qwen import QWEN3, qwen_coder_family
from tokenbridge.parsers.registry import tool_parser

CALLS_BEGIN, CALLS_END = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
_INVOKE = re.compile(r'<steptml:invoke name="([^"]+)">')
_PARAM = re.compile(r'<steptml:parameter name="([^"]+)">(.*?)</steptml:parameter>', re.S)


def _cast(value: str, typ: Any) -> Any:
    """One stripped parameter string as the schema's plain ``type`` says (else unchanged)."""
    if typ == "string":
        return value.strip()
    if typ == "integer":
        with contextlib.suppress(ValueError):
            return int(value)
    elif typ == "number":
        with contextlib.suppress(ValueError):
            return float(value)
    elif typ == "boolean":
        low = value.lower()
        return low == "true" if low in ("true", "false") else value
    elif typ == "null":
        return None if value.lower() == "null" else value
    return value


@tool_parser("step3", family="step3", render=RenderRules("with_tools"))
class Step3ToolParser(HeldBlockParser):
    """vLLM's ``step3`` tool-call format."""

    name = "step3"
    strip_content = True

    def stream_markers(self) -> tuple[str, ...]:
        return (CALLS_BEGIN,)

    def _arguments(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        for tool_name, schema in function_tools(self.ctx.tools):
            if tool_name == name:
                properties = (schema or {}).get("properties", {})
                for key, value in params.items():
                    params[key] = _cast(value, properties.get(key, {}).get("type"))
                break
        return params

    def extract(self, text: str, at_start: bool) -> Extraction:
        if CALLS_BEGIN not in text:
            return as_content(text)
        before, rest = text.split(CALLS_BEGIN, 1)
        if CALLS_END not in rest:
            return as_content(text)
        block, after = rest.split(CALLS_END, 1)
        calls = []
        for part in block.split(CALL_BEGIN):
            if CALL_END not in part:
                continue
            body = part.split(CALL_END, 1)[0]
            if SEP not in body:
                continue
            kind, invoke = body.split(SEP, 1)
            m = _INVOKE.search(invoke)
            if kind.strip() != "function" or m is None:
                continue
            params = {k: v.strip() for k, v in _PARAM.findall(invoke)}
            calls.append((m.group(1), dumps_args(self._arguments(m.group(1), params))))
        if not calls:
            return as_content(text)
        content = before + after
        content = content.strip() if at_start else content.rstrip()
        return Extraction(content or None, calls)


# Step-3.5/3.7 differ from Qwen3 only in reasoning handling, not in the tool grammar.
Step3p5ToolParser = tool_parser("step3p5", family="qwen3_coder")(
    family_parser("Step3p5ToolParser", qwen_coder_family("step3p5"))
)


Step5ToolParser = tool_parser("step5", family="qwen3_coder")(
    family_parser(
        "Step5ToolParser",
        qwen_coder_family(
            "step5", strip_content_with_tools=False, drop_ws_content_before_tools=False
        ),
    )
)
Step3p5ToolParser.incremental = streamed_tag_parser(Step3p5ToolParser, QWEN_PARAMS)
Step5ToolParser.incremental = streamed_tag_parser(Step5ToolParser, QWEN_PARAMS)


#: Step-3.5/3.7: the template always opens ``<think>``; trailing whitespace is stripped.
STEP3P5 = replace(QWEN3, thinking=ALWAYS_ON, strip_trailing_whitespace=True)


#: Step3: no start marker; the text before the first ``</think>`` is reasoning.
STEP3 = MarkerFormat(start=(), drop_end_in_content=False, drop_special_tokens=False)
register_format(MarkerEngineParser, STEP3P5, "step3p5", family="qwen3")
register_format(MarkerPartitionParser, STEP3, "step3", family="step3")


# -- Step-3, incremental --------------------------------------------------------------------------

# Where the incremental parser is.
TEXT, BLOCK, KIND, INVOKE, NAME, PARAMS, KEY, VALUE, SKIP_CALL, AFTER, RAW = range(11)
_INVOKE_OPEN, _PARAM_OPEN, _PARAM_CLOSE = '<steptml:invoke name="', '<steptml:parameter name="', "</steptml:parameter>"
_KEPT_TYPES = ("integer", "number", "boolean", "null")  # the types _cast turns into non-strings


class Step3StreamedState(ParserState):
    where: int = TEXT
    buf: str = ""  # undecided text: a partial marker, a kind, a name, a key
    seen: bool = False  # output arrived
    whole: bool = False  # it starts with space: held from its start until a call opens
    emitted: bool = False  # content was sent (later leading whitespace is no longer stripped)
    space: str = ""  # whitespace at the end of the content so far (stripped if nothing follows)
    held: str = ""  # while no call is open: the output from its start (``whole``) or from the block
    index: int = -1  # the open call's index
    name: str = ""
    members: int = 0  # its arguments sent
    key: str = ""
    value: str = ""  # a value held to its end (a type _cast converts), or space inside a streamed one
    streaming: bool = False  # the value streams as text
    started: bool = False  # a streamed value's first non-space character was sent


class Step3StreamedCalls(StreamedArguments):
    """``step3`` for ``--tool-call-streaming incremental``: content streams up to the calls
    block (stripped, as the one-shot answer strips it: an output that starts with space is held
    until a call opens); a call opens when its ``function`` kind and invoke name are read; each
    parameter follows when its name is read, a value the schema keeps as a string streaming
    stripped, an integer, number, boolean or null one held to its end and cast. Text after the
    block is content.

    The documented answer where the stream cannot take back what it sent: a call or block left
    unclosed stands (the one-shot answer drops it, or makes all content when none is closed); a
    value cut by its call's end is closed if it streams.
    """

    name = "step3"
    State = Step3StreamedState
    strips_values = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(Step3StreamedState())

    def _content(self, text: str, out: Delta) -> None:
        """Content, stripped as a whole: leading space dropped, trailing space held."""
        body = text.rstrip()
        if body:
            out.content += (self.space if self.emitted else "") + (body if self.emitted else body.lstrip())
            self.emitted, self.space = True, text[len(body):]
        else:
            self.space += text

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if text and not self.seen:
            self.seen, self.whole = True, text[0].isspace()
        if self.index < 0 and self.where != RAW and (self.whole or self.where != TEXT):
            self.held += text
        return super().feed(text, token_ids)

    def _step(self, buf: str, out: Delta) -> str:
        where = self.where
        if where == RAW:
            out.content += buf
            return ""
        if where in (TEXT, AFTER):
            at, _ = self._until(buf, (CALLS_BEGIN,) if where == TEXT else ())
            piece = buf[:at] if at >= 0 else buf[: len(buf) - len(self.buf)]
            if not self.whole or where == AFTER:
                self._content(piece, out)
            if at < 0:
                return ""
            if not self.whole:
                self.held = buf[at:]
            self.where = BLOCK
            return buf[at + len(CALLS_BEGIN):]
        if where in (BLOCK, SKIP_CALL, PARAMS):
            markers = {BLOCK: (CALL_BEGIN, CALLS_END), SKIP_CALL: (CALL_BEGIN, CALL_END, CALLS_END),
                       PARAMS: (_PARAM_OPEN, CALL_BEGIN, CALL_END, CALLS_END)}[where]
            at, marker = self._until(buf, markers)
            if marker is None:
                return ""
            rest = buf[at + len(marker):]
            if marker == CALLS_END:
                self._end_call(out)
                self.where = AFTER
                if self.index < 0:  # a closed block without calls: the whole output is content
                    out.content += ("" if self.whole else self.space) + self.held
                    self.where, self.held, self.space = RAW, "", ""
                    return ""
            elif marker == CALL_END:
                self._end_call(out)
                self.where = BLOCK
            elif marker == CALL_BEGIN:  # (a call left open: its part ends here)
                self._end_call(out)
                self.where = KIND
            else:
                self.where, self.key = KEY, ""
            return rest
        if where in (KIND, NAME, KEY):
            close = {KIND: SEP, NAME: '">', KEY: '">'}[where]
            at, marker = self._until(buf, (close, CALL_BEGIN, CALL_END, CALLS_END))
            if marker is None:
                if len(buf) > 4096:  # no kind, name or key is that long
                    self.where, self.buf = (PARAMS if where == KEY else SKIP_CALL), ""
                    return buf
                self.buf = buf  # the kind, name or key so far
                return ""
            if marker != close:
                self.where = PARAMS if where == KEY else SKIP_CALL
                return buf[at:]
            return self._named(where, buf[:at], out, buf[at + len(close):])
        if where == INVOKE:
            at, marker = self._until(buf, (_INVOKE_OPEN, CALL_BEGIN, CALL_END, CALLS_END))
            if marker == _INVOKE_OPEN:
                self.where = NAME
                return buf[at + len(marker):]
            if marker is not None:
                self.where = SKIP_CALL
                return buf[at:]
            return ""
        at, marker = self._until(buf, (_PARAM_CLOSE, CALL_BEGIN, CALL_END, CALLS_END))  # VALUE
        self._value_text(buf[:at] if marker else buf[: len(buf) - len(self.buf)], out)
        if marker is None:
            return ""
        if marker == _PARAM_CLOSE:
            self._end_value(out)
            self.where = PARAMS
            return buf[at + len(marker):]
        self.where = PARAMS
        return buf[at:]

    def _named(self, where: int, text: str, out: Delta, rest: str) -> str:
        """A call's kind, its invoke name or a parameter's name was read."""
        if where == KIND:
            self.where = INVOKE if text.strip() == "function" else SKIP_CALL
            return rest
        if not text or '"' in text:  # not a name the one-shot pattern reads
            self.where = PARAMS if where == KEY else INVOKE
            return rest
        if where == KEY:
            self.where = VALUE
            self._begin_value(text, self._type(text) not in _KEPT_TYPES, out)
            return rest
        self.name, self.where = text, PARAMS
        if self.whole:  # the output started with space: the content so far, stripped
            self._content(self.held[: self.held.find(CALLS_BEGIN)], out)
        self.held = ""
        self._open_call(text, out)
        return rest

    def _type(self, key: str) -> Any:
        for tool_name, schema in function_tools(self.ctx.tools):
            if tool_name == self.name:
                return ((schema or {}).get("properties", {}).get(key) or {}).get("type")
        return None

    def _converted(self, raw: str) -> str:
        return dumps_args(_cast(raw.strip(), self._type(self.key)))

    def _end_call(self, out: Delta) -> None:
        if self.where in (PARAMS, VALUE, KEY):
            self._close_call(self.where == VALUE, out)

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        if self.index < 0 and self.where != RAW:
            if self.whole or self.where != TEXT:
                out.content = ("" if self.whole else self.space) + self.held
            else:
                out.content = self.space + self.buf
        elif self.index >= 0:
            self._end_call(out)
        self.where, self.buf, self.held = AFTER, "", ""
        return out


Step3ToolParser.incremental = Step3StreamedCalls
