"""Incremental streaming for the marker + ``{"name", "arguments"}`` JSON families (hermes, …).

The whole-call parsers hold a call until it is decided; this one sends the id and name as soon as
the name's string closes, then the arguments as :class:`JsonStream` re-serializes them, so for a
well-formed output the deltas add up to exactly the one-shot answer. The state is a few flags,
the open call object's parse position and at most a partial marker: never the call so far.

Malformed or truncated output cannot be taken back, so the answer is fixed and documented:
* the calls already opened stand, with the argument bytes sent so far;
* at the first byte that breaks the format (invalid JSON, a non-string name, a call object with
  no name or arguments, text after the object, an end marker inside it) parsing stops, and the
  text from that byte on is content; for a call not yet opened (no name sent), from its start
  marker;
* at the end of a truncated call, the bytes still held undecided are dropped.
The same answer comes out for every chunking. Where a key repeats, the first is kept (see
``json_stream``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar

import msgspec

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, Stateful, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.json_stream import JsonStream, JsonStreamState
from tokenbridge.parsers.engine.lexer import partial_suffix

CONTENT, BETWEEN, CALL, BROKEN = range(4)
# Positions inside one call object.
OPEN, KEY_OR_CLOSE, KEY, COLON, VALUE, MEMBER, AFTER, TAIL = range(8)
# What the member being read is.
M_KEY, M_NAME, M_ARGS, M_OTHER = range(4)
JSON_WHITESPACE = " \t\n\r"


class CallObjectState(ParserState):
    pos: Annotated[int, msgspec.Meta(ge=OPEN, le=TAIL)]
    member: Annotated[int, msgspec.Meta(ge=M_KEY, le=M_OTHER)]
    sub: JsonStreamState | None  # the member being read, exactly while ``pos`` is MEMBER
    key: str
    buf: str
    named: bool
    has_args: bool
    held_args: str

    def check(self) -> None:
        if (self.sub is None) != (self.pos != MEMBER):
            raise ValueError("bad call object state: a member is read exactly at MEMBER")


class CallObject(Stateful):
    """One ``{"name": …, "arguments": …}`` object being read; ``feed`` returns deltas' pieces."""

    __slots__ = ("ensure_ascii", "args_keys", "stop_at_close", "args_first", "missing_args", "args_opts", "pos",
                 "member", "sub", "key", "buf", "named", "has_args", "held_args", "broken")

    def __init__(self, ensure_ascii: bool, args_keys: tuple[str, ...], stop_at_close: bool = False,
                 args_first: str | None = None, missing_args: str | None = None,
                 args_opts: dict[str, bool] | None = None) -> None:
        self.ensure_ascii = ensure_ascii
        self.args_keys = args_keys
        self.args_opts = args_opts or {}  # how the arguments are read (JsonStream's options)
        self.stop_at_close = stop_at_close  # the call ends with its object (no end marker)
        self.args_first = args_first  # the characters an arguments value may start with (None: any)
        self.missing_args = missing_args  # the arguments of a call without them (None: it breaks)
        self.pos = OPEN
        self.member = M_KEY
        self.sub: JsonStream | None = None
        self.key = ""  # the key of the member being read
        self.buf = ""  # a key's or the name's canonical text, until it closes
        self.named = False  # the name was sent
        self.has_args = False
        self.held_args = ""  # arguments written before the name (sent with it)
        self.broken: str | None = None  # raw text from the byte that broke the call

    @property
    def complete(self) -> bool:
        return self.pos == TAIL

    def feed(self, text: str) -> tuple[str | None, str, int]:
        """``(name if it became known, argument bytes, characters read)`` for ``text``; sets
        ``broken``. Reading stops early only at the object's end, with ``stop_at_close``."""
        name, args = None, []
        i, n = 0, len(text)
        while i < n and not (self.stop_at_close and self.pos == TAIL):
            if self.pos == MEMBER:
                out, used = self.sub.feed(text[i:])
                if self.member == M_ARGS:
                    if self.named:
                        args.append(out)
                    else:
                        self.held_args += out
                elif self.member != M_OTHER:
                    self.buf += out
                if self.sub.broken is not None:
                    self.broken = self.sub.broken
                    i = n
                    break
                i += used
                if self.sub.done:
                    if self._end_member():
                        name = json.loads(self.buf)
                        args.insert(0, self.held_args)
                        self.buf = self.held_args = ""
                continue
            c = text[i]
            if c in JSON_WHITESPACE:
                i += 1
                continue
            step = self._structure(c)
            if step < 0:
                self.broken = text[i:]
                i = n
                break
            i += step
            if self.pos == TAIL and not self.has_args:
                args.append(self.missing_args)
                self.has_args = True
        return name, "".join(args), i

    def _structure(self, c: str) -> int:
        """One structural character: 1 when read, 0 when it opens a member (read by the
        member's stream), -1 when it breaks the format."""
        pos = self.pos
        if pos == OPEN and c == "{":
            self.pos = KEY_OR_CLOSE
        elif pos in (KEY, KEY_OR_CLOSE) and c == '"':
            self._begin(M_KEY)
            return 0
        elif pos == KEY_OR_CLOSE and c == "}":
            return self._close()
        elif pos == COLON and c == ":":
            self.pos = VALUE
        elif pos == VALUE:
            if self.key == "name" and not self.named:
                if c != '"':
                    return -1  # vLLM refuses a name that is not a string
                self._begin(M_NAME)
            elif self.key in self.args_keys and not self.has_args:
                if self.args_first is not None and c not in self.args_first:
                    return -1
                self._begin(M_ARGS)
                self.has_args = True
            else:
                self._begin(M_OTHER)
            return 0
        elif pos == AFTER and c == ",":
            self.pos = KEY
        elif pos == AFTER and c == "}":
            return self._close()
        else:  # includes TAIL: only whitespace may follow the object
            return -1
        return 1

    def _begin(self, member: int) -> None:
        self.member = member
        self.sub = self._stream(member)
        self.pos = MEMBER

    def _stream(self, member: int) -> JsonStream:
        return JsonStream(self.ensure_ascii, **(self.args_opts if member == M_ARGS else {}))

    def _end_member(self) -> bool:
        """Closes the member just read; True when it was the name (its text is in ``buf``)."""
        member, self.sub = self.member, None
        if member == M_KEY:
            self.key, self.buf = json.loads(self.buf), ""
            self.pos = COLON
            return False
        self.pos = AFTER
        if member == M_NAME:
            self.named = True
            return True
        return False

    def _close(self) -> int:
        if not self.named or not (self.has_args or self.missing_args is not None):
            return -1
        self.pos = TAIL
        return 1

    def snapshot(self) -> CallObjectState:
        return CallObjectState(self.pos, self.member, None if self.sub is None else self.sub.snapshot(), self.key,
                               self.buf, self.named, self.has_args, self.held_args)

    def load(self, state: CallObjectState) -> None:
        state.check()
        self.pos, self.member, self.key, self.buf, self.named, self.has_args, self.held_args = (
            state.pos, state.member, state.key, state.buf, state.named, state.has_args, state.held_args)
        self.sub = None
        if state.sub is not None:
            self.sub = self._stream(self.member)
            self.sub.load(state.sub)


class OpenCall(Stateful):
    """A parser reading at most one call object at a time: ``_call``, saved as its state's
    ``call`` (where the state may hold one, its ``check`` says). The JSON call streams
    below save and load their states directly (the hottest states of a stream)."""

    _call: CallObject | None
    call: CallObjectState | None

    index: int  # the open (or next) call's index
    raw: str  # the open call's text while its name is not sent yet

    def _new_call(self) -> CallObject:
        raise NotImplementedError

    def _call_id(self) -> str | None:
        """The id of a call whose name was just read (None: derender assigns one)."""
        return None

    def _step_call(self, text: str, calls: list[ToolCallDelta]) -> tuple[int, bool]:
        """Feeds the open call: its name and argument pieces go to ``calls``, the text read while
        it has no name to ``raw``. ``(characters read, the name was sent now)``."""
        call = self._call
        name, args, used = call.feed(text)
        if name is None and not call.named:
            self.raw += text[:used]
        if name is not None:
            calls.append(ToolCallDelta(self.index, name=name, arguments=args, id=self._call_id()))
            self.raw = ""
        elif args:
            calls.append(ToolCallDelta(self.index, arguments=args))
        return used, name is not None

    def snapshot(self) -> Any:
        self.call = None if self._call is None else self._call.snapshot()
        return super().snapshot()

    def load(self, state: ParserState) -> None:
        super().load(state)
        self._call = self._loaded_call(self.call)

    def _loaded_call(self, state: CallObjectState | None) -> CallObject | None:
        if state is None:
            return None
        call = self._new_call()
        call.load(state)
        return call


NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class JsonCallsState(ParserState):
    mode: Annotated[int, msgspec.Meta(ge=CONTENT, le=BROKEN)]
    buf: str  # at most a partial marker between feeds
    index: NonNegative  # the next call's index
    raw: str  # the open call's text while its name is not yet sent
    call: CallObjectState | None  # exactly in CALL

    def check(self) -> None:
        if (self.call is None) != (self.mode != CALL):
            raise ValueError("bad tool parser state: a call is open exactly in CALL")


class StreamedJsonCalls(OpenCall, ToolParser):
    """``<start>{"name", "arguments"}<end>`` calls, streamed as they are written.

    Content before the first start marker streams; text between and after calls is dropped
    (hermes' one-shot rules) unless ``keeps_text_between``. A call without its end marker is
    read to the end of the output. With no end marker (``end`` None) the object's ``}`` ends
    the call (Granite-20B-FunctionCalling).
    """

    start: ClassVar[str]
    end: ClassVar[str | None]
    args_keys: ClassVar[tuple[str, ...]] = ("arguments",)
    ensure_ascii: ClassVar[bool] = False
    #: how the arguments are read (``JsonStream`` options; e.g. a string kept as its text)
    args_opts: ClassVar[dict[str, bool]] = {}
    keeps_text_between: ClassVar[bool] = False
    streams_arguments = True
    State = JsonCallsState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.mode, self.buf, self.index, self.raw, self._call = CONTENT, "", 0, "", None

    def snapshot(self) -> JsonCallsState:
        if self.State is not JsonCallsState:  # a subclass that adds fields: the general way
            return OpenCall.snapshot(self)
        call = None if self._call is None else self._call.snapshot()
        return JsonCallsState(self.mode, self.buf, self.index, self.raw, call)

    def load(self, state: JsonCallsState) -> None:
        if type(state) is not JsonCallsState:
            OpenCall.load(self, state)
            return
        self.mode, self.buf, self.index, self.raw = state.mode, state.buf, state.index, state.raw
        self._call = self._loaded_call(state.call)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if not text and not self.buf:  # a chunk of reasoning: nothing to read, in any mode
            return Delta()
        return self._run(self.buf + text, False)

    def finish(self) -> Delta:
        text, self.buf = self.buf, ""
        return self._run(text, True)

    def _run(self, buf: str, final: bool) -> Delta:
        self.buf = ""
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        while True:
            mode = self.mode
            if mode == BROKEN:
                content.append(buf)
                break
            if mode == CALL and self.end is None:
                buf = self._read_object(buf, content, calls, final)
                if self.mode == CALL:
                    break
                continue
            marker = self.end if mode == CALL else self.start
            pos = buf.find(marker)
            if pos == -1:
                keep = 0 if final else partial_suffix(buf, (marker,))
                piece, rest = buf[: len(buf) - keep], buf[len(buf) - keep :]
            else:
                piece, rest = buf[:pos], buf[pos:]
            if mode == CONTENT or (mode == BETWEEN and self.keeps_text_between):
                content.append(piece)
            elif mode == CALL:
                self._feed_call(piece, content, calls)
                if self.mode == CALL and (pos != -1 or final):
                    self._end_call(content, truncated=pos == -1)
                if self.mode == BROKEN:
                    buf = rest
                    continue
            if pos == -1:
                self.buf = rest
                break
            buf = rest[len(marker) :]
            if mode != CALL:
                self._open_call()
        return Delta(content="".join(content), tool_calls=calls)

    def _open_call(self) -> None:
        self.mode = CALL
        self._call = self._new_call()
        self.raw = self.start

    def _new_call(self) -> CallObject:
        return CallObject(self.ensure_ascii, self.args_keys, stop_at_close=self.end is None, args_opts=self.args_opts)

    def _read_object(self, buf: str, content: list[str], calls: list[ToolCallDelta], final: bool) -> str:
        """A call ended by its object's close: the text after it is returned."""
        used = self._feed_call(buf, content, calls)
        if self.mode == CALL and (self._call.complete or final):
            self._end_call(content, truncated=not self._call.complete)
        return "" if self.mode == BROKEN else buf[used:]

    def _feed_call(self, piece: str, content: list[str], calls: list[ToolCallDelta]) -> int:
        used, _ = self._step_call(piece, calls)
        if self._call.broken is not None:
            self._break(self._call.broken, content)
        return used

    def _end_call(self, content: list[str], truncated: bool) -> None:
        """The call's text ended: at its end marker, or (``truncated``) at the output's end."""
        call = self._call
        if call.complete or (truncated and call.named):
            self.mode, self._call, self.raw = BETWEEN, None, ""
            self.index += 1
        else:
            self._break("", content)

    def _break(self, tail: str, content: list[str]) -> None:
        """Stop parsing: a call not yet opened is content from its start marker; an opened one
        stands, and the text from the breaking byte (``tail``) is content."""
        content.append(tail if self._call.named else self.raw)
        self.mode, self._call, self.raw = BROKEN, None, ""


PROSE = 4  # a bare-JSON family's text before its first call (held: content is null once a call is found)


class BareJsonCallsState(ParserState):
    mode: Annotated[int, msgspec.Meta(ge=BETWEEN, le=PROSE)]
    raw: str  # prose before the first call, then the open call's text until it is named
    index: NonNegative
    glued: bool  # the previous call's object just closed
    call: CallObjectState | None  # exactly in CALL

    def check(self) -> None:
        if (self.call is None) != (self.mode != CALL):
            raise ValueError("bad tool parser state: a call is open exactly in CALL")


class StreamedBareJsonCalls(OpenCall, ToolParser):
    """Llama 3.x/4 calls: every ``{`` outside a call opens a ``{"name", "arguments" |
    "parameters"}`` object and the object's ``}`` ends it; prose is raw until a call's name is
    sent (then it is dropped: the one-shot content is null) and dropped between calls. A ``{``
    glued to the previous call's ``}`` is skipped, as vLLM skips it. The first of
    ``arguments``/``parameters`` written is the arguments (vLLM prefers ``arguments``)."""

    args_keys: ClassVar[tuple[str, ...]] = ("arguments", "parameters")
    ensure_ascii: ClassVar[bool] = False
    streams_arguments = True
    State = BareJsonCallsState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.mode, self.raw, self.index, self.glued, self._call = PROSE, "", 0, False, None

    def snapshot(self) -> BareJsonCallsState:
        call = None if self._call is None else self._call.snapshot()
        return BareJsonCallsState(self.mode, self.raw, self.index, self.glued, call)

    def load(self, state: BareJsonCallsState) -> None:
        self.mode, self.raw, self.index, self.glued = state.mode, state.raw, state.index, state.glued
        self._call = self._loaded_call(state.call)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        i, n = 0, len(text)
        while i < n:
            if self.mode == BROKEN:
                content.append(text[i:])
                break
            if self.mode == CALL:
                i += self._feed_call(text[i:], content, calls)
                continue
            if self.glued:
                self.glued = False
                if text[i] == "{":
                    i += 1
                    continue
            j = text.find("{", i)
            if self.mode == PROSE:
                self.raw += text[i : n if j == -1 else j]
            if j == -1:
                break
            self.mode, i = CALL, j
            self._call = self._new_call()
        return Delta(content="".join(content), tool_calls=calls)

    def _new_call(self) -> CallObject:
        return CallObject(self.ensure_ascii, self.args_keys, stop_at_close=True)

    def _feed_call(self, text: str, content: list[str], calls: list[ToolCallDelta]) -> int:
        used, _ = self._step_call(text, calls)
        call = self._call
        if call.broken is not None:
            content.append(call.broken if call.named else self.raw)
            self.mode, self._call, self.raw = BROKEN, None, ""
        elif call.complete:
            self.mode, self._call, self.glued = BETWEEN, None, True
            self.index += 1
        return used

    def finish(self) -> Delta:
        """Prose with no call is the content; a truncated call stands once named."""
        raw, self.raw = self.raw, ""
        if self.mode == CALL and self._call.named:
            raw = ""
        if self.mode in (PROSE, CALL):
            self.mode, self._call = BROKEN, None
            return Delta(content=raw)
        return Delta()
