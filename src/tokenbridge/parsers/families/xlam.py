"""xLAM JSON tool calls: a ``[{"name", "arguments"}, …]`` array, wherever xLAM writes it.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.held import (
    Extraction, HeldState, JsonFamily, as_content, held_calls_parser, random_uuid,
)
from tokenbridge.parsers.engine.json import named_calls
from tokenbridge.parsers.engine.json_calls import AFTER as MEMBER_END
from tokenbridge.parsers.engine.json_calls import JSON_WHITESPACE, KEY_OR_CLOSE, CallObject, CallObjectState, OpenCall
from tokenbridge.parsers.engine.json_stream import JsonStream, JsonStreamState
from tokenbridge.parsers.registry import tool_parser


_XLAM_BLOCKS = (
    re.compile(r"```(?:json)?\s*([\s\S]*?)```"),
    re.compile(r"\[TOOL_CALLS\]([\s\S]*?)(?=\n|$)"),
    re.compile(r"<tool_call>([\s\S]*?)</tool_call>"),
)
_XLAM_AFTER_THINK = re.compile(r"</think>([\s\S]*)")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _xlam_split(text: str) -> tuple[str | None, str | None]:
    """``(content, calls JSON)`` the way xLAM locates its call array."""
    m = _XLAM_AFTER_THINK.search(text)
    if m:
        head = text[: m.start() + len("</think>")].strip()
        tail = m.group(1).strip()
        if _is_json(tail):
            return head, tail
        for pattern in _XLAM_BLOCKS:
            found = next((b for b in pattern.findall(tail) if _is_json(b)), None)
            if found is not None:
                return head, found
    for pattern in _XLAM_BLOCKS:
        blocks = pattern.findall(text)
        found = next((b for b in blocks if _is_json(b)), None)
        if found is not None:
            return pattern.sub("", text).strip(), found
    if text.strip().startswith("["):
        if _is_json(text) or ("{" in text and "name" in text and "arguments" in text):
            return None, text
    return text, None


def extract_xlam(text: str, ctx: ParseContext) -> Extraction:
    """xLAM: a JSON array of ``{"name", "arguments"}`` found after ``</think>``, in a code
    fence, after ``[TOOL_CALLS]``, inside ``<tool_call>`` or as the whole output; entries
    without both keys are skipped. Content is the text with the located block removed."""
    try:
        content, raw = _xlam_split(text)
        if not raw:
            return as_content(text)
        data = json.loads(raw)
        if not isinstance(data, list):
            return as_content(text)
        calls = named_calls(data)
    except Exception:
        return as_content(text)
    return Extraction(content, calls) if calls else as_content(text)


XlamToolParser = tool_parser("xlam", family="xlam")(
    held_calls_parser(JsonFamily("xlam", extract_xlam, call_id=lambda index: f"call_{index}_{random_uuid()}"))
)


# Where the incremental parser is: before the output's first character that is not blank, in
# a bare call array, after it, past a break (the rest is content), or handing the output to
# the hold-then-decide parser.
LEAD, ARRAY, TAIL, OVER, WHOLE = range(5)
# Positions in the array.
ITEM_OR_CLOSE, ITEM, AFTER_ITEM = range(3)
TOOL_CALLS = "[TOOL_CALLS]"


class XlamStreamedState(ParserState):
    where: int = LEAD
    raw: str = ""  # the output while no call is sent (all of it is content if none is)
    pos: int = ITEM_OR_CLOSE
    item: int = 0  # the array's entries read (a call's id counts them, as vLLM's does)
    index: int = 0  # the next call's index
    call: CallObjectState | None = None  # the entry being read, when it is an object
    skip: JsonStreamState | None = None  # the entry being read, when it is not
    held: HeldState | None = None  # the hold-then-decide parser's state (WHOLE)

    def check(self) -> None:
        if (self.held is None) != (self.where != WHOLE):
            raise ValueError("bad tool parser state: the held parser is there exactly in WHOLE")
        if self.call is not None and self.skip is not None:
            raise ValueError("bad tool parser state: one entry is read at a time")


class XlamStreamedCalls(OpenCall, ToolParser):
    """``xlam`` for ``--tool-call-streaming incremental``: an output that is a bare JSON array
    (xLAM's own format) streams its calls, each when its name closes, the arguments
    re-serialized (a string kept verbatim); the content is null. The output is held while no
    call is sent: if the array ends or breaks before one is, it is decided whole.

    Any other output (after ``</think>``, in a code fence, after ``[TOOL_CALLS]`` or in
    ``<tool_call>``) is decided whole, as in ``whole`` mode: vLLM's answer then comes from a
    search of the whole text (the first kind of block, in that order, that holds valid JSON
    anywhere; the content is the text with every block of that kind removed), which no stream
    can anticipate.

    An object entry without a name or arguments is skipped, as vLLM skips it, unless its name
    was sent (then it breaks the array). Malformed output after a call was sent: the calls
    stand and the text from the breaking byte is content.
    """

    name = "xlam"
    streams_arguments = True
    State = XlamStreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(XlamStreamedState())

    def snapshot(self) -> XlamStreamedState:
        self.skip = None if self._skip is None else self._skip.snapshot()
        self.held = None if self._held is None else self._held.snapshot()
        return super().snapshot()

    def load(self, state: XlamStreamedState) -> None:
        super().load(state)
        self._skip = self._held = None
        if state.skip is not None:
            self._skip = JsonStream()
            self._skip.load(state.skip)
        if state.held is not None:
            self._held = XlamToolParser(self.ctx)
            self._held.load(state.held)

    def _new_call(self) -> CallObject:
        return CallObject(False, ("arguments",), stop_at_close=True, args_first='{"', args_opts={"raw_string": True})

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        if self.where == WHOLE:
            return self._held.feed(text, token_ids)
        if self.where == LEAD:
            self.raw += text
            body = self.raw.lstrip(JSON_WHITESPACE)
            if not body or (len(body) < len(TOOL_CALLS) and TOOL_CALLS.startswith(body)):
                return out
            if body[0] != "[" or body.startswith(TOOL_CALLS):
                return self._hand_over("")
            self.where, text = ARRAY, body[1:]
        elif self.raw:
            self.raw += text
        if self.where == ARRAY:
            text = self._array(text, out)
            if self.raw and self.where != ARRAY:  # no call: the answer is the whole text's
                return self._hand_over("")
        if self.where == TAIL:
            body = text.lstrip(JSON_WHITESPACE)
            if body:
                self.where, text = OVER, body
        if self.where == OVER:
            out.content += text
        return out

    def _hand_over(self, rest: str) -> Delta:
        """No call was sent and the output is not (or no longer) a bare call array: it is
        decided whole, from the start."""
        self.where, self._held, self._call, self._skip = WHOLE, XlamToolParser(self.ctx), None, None
        raw, self.raw = self.raw, ""
        return self._held.feed(raw + rest, [])

    def _array(self, text: str, out: Delta) -> str:
        """Reads array text; returns the text after the array, or from a break (then the
        parser is OVER)."""
        i, n = 0, len(text)
        while i < n and self.where == ARRAY:
            if self._call is not None:
                name, args, used = self._call.feed(text[i:])
                if name is not None:
                    out.tool_calls.append(ToolCallDelta(self.index, name=name, arguments=args,
                                                        id=f"call_{self.item}_{random_uuid()}"))
                    self.raw = ""
                elif args:
                    out.tool_calls.append(ToolCallDelta(self.index, arguments=args))
                i += used
                broken = self._call.broken
                if broken is not None and broken[:1] == "}" and not self._call.named and self._call.pos in (
                        KEY_OR_CLOSE, MEMBER_END):
                    # an object without a name or arguments closed: vLLM skips it
                    self._call, self.pos, self.item = None, AFTER_ITEM, self.item + 1
                    text, i, n = broken[1:], 0, len(broken) - 1
                    continue
                if broken is not None:
                    return self._break(broken)
                if self._call.complete:
                    self._call, self.pos, self.index, self.item = None, AFTER_ITEM, self.index + 1, self.item + 1
                continue
            if self._skip is not None:
                _, used = self._skip.feed(text[i:])
                if self._skip.broken is not None:
                    return self._break(self._skip.broken)
                i += used
                if self._skip.done:
                    self._skip, self.pos, self.item = None, AFTER_ITEM, self.item + 1
                continue
            c, pos = text[i], self.pos
            if c in JSON_WHITESPACE:
                i += 1
            elif pos in (ITEM_OR_CLOSE, AFTER_ITEM) and c == "]":
                self.where = TAIL
                i += 1
            elif pos == AFTER_ITEM and c == ",":
                self.pos = ITEM
                i += 1
            elif pos in (ITEM_OR_CLOSE, ITEM) and c == "{":
                self._call = self._new_call()
            elif pos in (ITEM_OR_CLOSE, ITEM):
                self._skip = JsonStream()
            else:
                return self._break(text[i:])
        return text[i:]

    def _break(self, tail: str) -> str:
        self.where, self._call, self._skip = OVER, None, None
        return tail

    def finish(self) -> Delta:
        if self.raw and self.where != WHOLE:
            self._hand_over("")
        if self.where == WHOLE:
            out = self._held.finish()
            self.null_content = self._held.null_content
            return out
        self.where, self._call, self._skip = OVER, None, None
        return Delta()


XlamToolParser.incremental = XlamStreamedCalls
