"""Apertus JSON tool calls: ``<|tools_prefix|>[{"fn": {args}}, …]<|tools_suffix|>``.
"""

from __future__ import annotations

import json
import re

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, Stateful, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import complete_truncated_json, dumps_args
from tokenbridge.parsers.engine.json_stream import CompletingJsonStream, CompletingJsonStreamState
from tokenbridge.parsers.engine.lexer import partial_suffix
from tokenbridge.parsers.registry import tool_parser


_DECODER = json.JSONDecoder()
APERTUS_PREFIX, APERTUS_SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
_APERTUS_BLOCK = re.compile(f"{re.escape(APERTUS_PREFIX)}(.*?)(?:{re.escape(APERTUS_SUFFIX)}|$)", re.S)


def extract_apertus(text: str, ctx: ParseContext) -> Extraction:
    """Apertus ``<|tools_prefix|>[{"fn": {args}}, …]<|tools_suffix|>``: each non-empty object's
    first member is a call. A truncated array is completed (length cut); text after the JSON
    and after the suffix joins the stripped leading content with newlines."""
    m = _APERTUS_BLOCK.search(text)
    if m is None:
        return as_content(text)
    group = m.group(1)
    stripped = group.lstrip()
    try:
        try:
            parsed, end = _DECODER.raw_decode(stripped)
            trailing = stripped[end:]
        except json.JSONDecodeError:
            parsed, trailing = complete_truncated_json(group), ""
        entries = parsed if isinstance(parsed, list) else [parsed] if parsed else []
        calls = [
            (next(iter(e)), dumps_args(next(iter(e.values()))))
            for e in entries
            if isinstance(e, dict) and e
        ]
    except Exception:
        return as_content(text)
    content = text[: m.start()].strip()
    for extra in (trailing.replace(APERTUS_SUFFIX, "") if trailing.strip() else "",
                  text[m.end() :].replace(APERTUS_SUFFIX, "")):
        if extra.strip():
            content = (content + "\n" + extra.strip()).strip()
    return Extraction(content or None, calls)


ApertusToolParser = tool_parser("apertus", "apertus2509", family="apertus")(
    held_calls_parser(JsonFamily("apertus", extract_apertus))
)


# Positions in the block's JSON value.
TOP, LIST_FIRST, LIST_NEXT, LIST_AFTER, ENTRY_FIRST, ENTRY_NEXT, KEY, COLON, VALUE, MEMBER, ENTRY_AFTER, DONE = range(12)
# What the member being read is: the entry's first key (its name), any other key, the first
# value (its arguments), or a value nobody reads.
NAME_KEY, OTHER_KEY, ARGS, SKIPPED = range(4)
JSON_BLANK = " \t\n\r"


class ApertusBlockState(ParserState):
    pos: int = TOP
    in_list: bool = False
    member: int = SKIPPED
    after: int = DONE  # where reading goes once the member's value ends
    name: str | None = None  # the entry's name, read but not sent (its value has not begun)
    named: bool = False  # the open entry's call was sent
    index: int = 0  # the next call's index
    sub: CompletingJsonStreamState | None = None  # the member being read


class ApertusBlock(Stateful):
    """The JSON value after ``<|tools_prefix|>``: a list of ``{"fn": args, …}`` entries or one
    entry; each non-empty entry's first member is a call, sent when its value begins (an entry
    cut before it has none), its arguments streamed re-serialized; other values are read and
    dropped. ``feed`` returns the call deltas and the characters it read."""

    State = ApertusBlockState

    def __init__(self) -> None:
        self.sub: CompletingJsonStream | None = None
        self.broken: str | None = None
        self.load(ApertusBlockState())

    def snapshot(self) -> ApertusBlockState:
        return ApertusBlockState(self.pos, self.in_list, self.member, self.after, self.name, self.named, self.index,
                                 None if self.sub is None else self.sub.snapshot())

    def load(self, state: ApertusBlockState) -> None:
        self.pos, self.in_list, self.member, self.after, self.name, self.named, self.index = (
            state.pos, state.in_list, state.member, state.after, state.name, state.named, state.index)
        self.sub = None
        if state.sub is not None:
            self.sub = CompletingJsonStream()
            self.sub.load(state.sub)

    @property
    def done(self) -> bool:
        return self.pos == DONE

    @property
    def begun(self) -> bool:
        return self.pos != TOP

    def feed(self, text: str, calls: list[ToolCallDelta]) -> int:
        i, n = 0, len(text)
        while i < n and self.pos != DONE:
            if self.pos in (KEY, MEMBER):
                out, used = self.sub.feed(text[i:])
                if self.member == ARGS and out:
                    calls.append(ToolCallDelta(self.index, arguments=out))
                elif self.member == NAME_KEY:
                    self.name = (self.name or "") + out
                if self.sub.broken is not None:
                    self.broken = self.sub.broken
                    return n
                i += used
                if self.sub.done:
                    self._end_member()
                continue
            c = text[i]
            if c in JSON_BLANK or (self.pos == TOP and c.isspace()):
                i += 1
                continue
            if not self._structure(c, calls):
                self.broken = text[i:]
                return n
            if self.pos not in (KEY, MEMBER):
                i += 1
        return i

    def _structure(self, c: str, calls: list[ToolCallDelta]) -> bool:
        """One structural character (a member's first one is left to its stream); False when
        it breaks the format."""
        pos = self.pos
        if pos in (TOP, LIST_FIRST, LIST_NEXT):
            if pos == TOP and c == "[":
                self.pos, self.in_list = LIST_FIRST, True
            elif pos == LIST_FIRST and c == "]":
                self.pos = DONE
            elif c == "{":
                self.pos = ENTRY_FIRST
            else:
                self._begin(SKIPPED, LIST_AFTER if self.in_list else DONE)
        elif pos == LIST_AFTER and c in ",]":
            self.pos = LIST_NEXT if c == "," else DONE
        elif pos in (ENTRY_FIRST, ENTRY_NEXT) and c == '"':
            self._begin(NAME_KEY if pos == ENTRY_FIRST else OTHER_KEY, COLON)
            self.pos = KEY
        elif pos in (ENTRY_FIRST, ENTRY_AFTER) and c == "}":
            self._end_entry()
        elif pos == ENTRY_AFTER and c == ",":
            self.pos = ENTRY_NEXT
        elif pos == COLON and c == ":":
            self.pos = VALUE
        elif pos == VALUE:
            if self.name is not None:
                calls.append(ToolCallDelta(self.index, name=json.loads(self.name)))
                self.name, self.named = None, True
                self._begin(ARGS, ENTRY_AFTER)
            else:
                self._begin(SKIPPED, ENTRY_AFTER)
        else:
            return False
        return True

    def _begin(self, member: int, after: int) -> None:
        self.member, self.after, self.pos = member, after, MEMBER
        self.sub = CompletingJsonStream()
        if member == NAME_KEY:
            self.name = ""

    def _end_member(self) -> None:
        self.sub, self.pos = None, self.after

    def _end_entry(self) -> None:
        if self.named:
            self.index, self.named = self.index + 1, False
        self.name = None
        self.pos = LIST_AFTER if self.in_list else DONE

    def complete(self, calls: list[ToolCallDelta]) -> bool:
        """Closes a value cut short, as vLLM completes it; False when it cannot be."""
        if self.pos == TOP:
            self.broken = ""
            return False
        if self.sub is not None:
            out = self.sub.complete()
            if self.sub.broken is not None:
                self.broken = self.sub.broken
                return False
            if self.member == ARGS and out:
                calls.append(ToolCallDelta(self.index, arguments=out))
        self.pos, self.sub = DONE, None
        return True


# Where the incremental parser is.
START, HOLD_ALL, BEFORE, BLOCK, TRAILING, AFTER, CONTENT = range(7)


class ApertusStreamedState(ParserState):
    where: int = START
    buf: str = ""  # held text: before the block, a partial marker, a piece's blank end
    pre: str = ""  # the stripped text before the block, sent once the block is decided (HOLD_ALL)
    raw: str = ""  # the text not sent yet while the block is undecided (content if it breaks)
    said: bool = False  # content that is not blank was sent (the next piece joins with a newline)
    started: bool = False  # the piece being read has begun (its leading blank is dropped)
    block: ApertusBlockState | None = None

    def check(self) -> None:
        if (self.block is None) != (self.where != BLOCK):
            raise ValueError("bad tool parser state: the block is read exactly in BLOCK")


class ApertusStreamedCalls(ToolParser):
    """``apertus`` for ``--tool-call-streaming incremental``: the JSON after
    ``<|tools_prefix|>`` read as written (``ApertusBlock``), each call sent when its arguments
    begin. A block cut short (by ``<|tools_suffix|>`` or the output's end) is completed as vLLM
    completes it, so a truncated output adds up to the one-shot answer too.

    The content is the one-shot's: the stripped text before the block, then the stripped text
    after the JSON and after the suffix (suffixes removed), each joined by a newline. So a
    blank run is held until text follows it, and an output that begins with blank text is held
    until the block is decided (its first call sent or its JSON ended). A block that breaks
    before it is decided leaves the whole output content, as in the one-shot answer; one that
    breaks later keeps the calls sent, and the text from the breaking byte on is content.
    """

    name = "apertus"
    streams_arguments = True
    State = ApertusStreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.load(ApertusStreamedState())

    def snapshot(self) -> ApertusStreamedState:
        self.block = None if self._block is None else self._block.snapshot()
        return super().snapshot()

    def load(self, state: ApertusStreamedState) -> None:
        super().load(state)
        self._block = None
        if state.block is not None:
            self._block = ApertusBlock()
            self._block.load(state.block)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        self._run(text, out, False)
        return out

    def finish(self) -> Delta:
        out = Delta(tool_calls=[])
        self._run("", out, True)
        if self.where in (TRAILING, AFTER) and not self.said:
            self.null_content = True  # a valid block: vLLM's content is null when it is empty
        self.where, self.buf, self.raw, self._block = CONTENT, "", "", None
        return out

    def _run(self, text: str, out: Delta, final: bool) -> None:
        if self.where == START and text:
            self.where = HOLD_ALL if text[0].isspace() else BEFORE
        if self.where in (START, HOLD_ALL, BEFORE):
            text = self._before(text, out, final)
            if text is None:
                return
        if self.where == BLOCK:
            text = self._read_block(text, out, final)
            if text is None:
                return
        if self.where == TRAILING:
            buf = self.buf + text
            pos = buf.find(APERTUS_SUFFIX)
            if pos == -1:
                self.buf = ""
                self._piece(buf, out, final)
                return
            self.buf = ""
            self._piece(buf[:pos], out, True)
            text, self.where, self.started = buf[pos + len(APERTUS_SUFFIX):], AFTER, False
        if self.where == AFTER:
            self._piece(text, out, final)
        elif self.where == CONTENT:
            out.content += text

    def _before(self, text: str, out: Delta, final: bool) -> str | None:
        """Text before the prefix; returns the text after it (None: it has not come)."""
        buf = self.buf + text
        pos = buf.find(APERTUS_PREFIX)
        if pos == -1:
            if final:
                out.content += buf
                self.buf = ""
            elif self.where == BEFORE:
                end = len(buf) - partial_suffix(buf, (APERTUS_PREFIX,))
                end = len(buf[:end].rstrip())
                out.content += buf[:end]
                self.said = self.said or bool(buf[:end])
                self.buf = buf[end:]
            else:
                self.buf = buf
            return None
        head = buf[:pos]
        if self.where == HOLD_ALL:
            self.pre, self.raw = head.strip(), buf[: pos + len(APERTUS_PREFIX)]
        else:
            out.content += head.rstrip()
            self.said = self.said or bool(head.rstrip())
            self.raw = head[len(head.rstrip()):] + APERTUS_PREFIX
        self.where, self.buf, self._block = BLOCK, "", ApertusBlock()
        return buf[pos + len(APERTUS_PREFIX):]

    def _decide(self, out: Delta) -> None:
        """The block is valid (it has a call, or its JSON ended): what was held before it is
        sent as content, stripped."""
        if self.raw:
            out.content += self.pre
            self.said = self.said or bool(self.pre)
            self.pre = self.raw = ""

    def _read_block(self, text: str, out: Delta, final: bool) -> str | None:
        """Feeds the block up to the suffix; returns the text after it once it ends."""
        block = self._block
        buf = self.buf + text
        pos = buf.find(APERTUS_SUFFIX)
        end = pos if pos != -1 else len(buf) - (0 if final else partial_suffix(buf, (APERTUS_SUFFIX,)))
        piece, self.buf = buf[:end], "" if pos != -1 else buf[end:]
        used = block.feed(piece, out.tool_calls)
        if self.raw:
            self.raw += piece[:used]
        if any(tc.name is not None for tc in out.tool_calls) or block.done:
            self._decide(out)
        if block.broken is not None:
            out.content += (self.raw if self.raw else block.broken) + piece[used:] + buf[end:]
            self.where, self._block, self.raw, self.pre, self.buf = CONTENT, None, "", "", ""
            return None
        if block.done:
            self.where, self._block, self.started, self.buf = TRAILING, None, False, ""
            return piece[used:] + buf[end:]
        if pos == -1 and not final:
            return None
        if not block.complete(out.tool_calls):
            out.content += (self.raw or block.broken) + buf[end:]
            self.where, self._block, self.raw, self.pre, self.buf = CONTENT, None, "", "", ""
            return None
        self._decide(out)
        self.where, self._block, self.started = AFTER, None, False
        return buf[pos + len(APERTUS_SUFFIX):] if pos != -1 else ""

    def _piece(self, text: str, out: Delta, final: bool) -> None:
        """One stripped piece of content after the block, suffixes removed: its leading blank
        is dropped, a blank run and a partial suffix held until text follows, a newline put
        before it when content was sent."""
        raw = self.buf + text
        keep = 0 if final else partial_suffix(raw, (APERTUS_SUFFIX,))
        body, tail = raw[: len(raw) - keep].replace(APERTUS_SUFFIX, ""), raw[len(raw) - keep:]
        if not self.started:
            body = body.lstrip()
        sent = (body + tail).rstrip() if final else body.rstrip()
        if sent:
            if not self.started and self.said:
                out.content += "\n"
            out.content += sent
            self.started = self.said = True
        self.buf = "" if final else body[len(sent):] + tail

ApertusToolParser.incremental = ApertusStreamedCalls
