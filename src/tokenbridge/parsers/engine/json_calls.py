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
from typing import Any, ClassVar

from tokenbridge.parsers.base import Delta, ParseContext, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.json_stream import JsonStream
from tokenbridge.parsers.engine.lexer import partial_suffix

CONTENT, BETWEEN, CALL, BROKEN = range(4)
# Positions inside one call object.
OPEN, KEY_OR_CLOSE, KEY, COLON, VALUE, MEMBER, AFTER, TAIL = range(8)
# What the member being read is.
M_KEY, M_NAME, M_ARGS, M_OTHER = range(4)
JSON_WHITESPACE = " \t\n\r"


class CallObject:
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

    def snapshot(self) -> list[Any]:
        return [self.pos, self.member, self.sub.snapshot() if self.sub is not None else None, self.key,
                self.buf, self.named, self.has_args, self.held_args]

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, list) or len(snap) != 8:
            raise ValueError("bad tool call state")
        pos, member, sub, key, buf, named, has_args, held = snap
        if (
            pos not in range(8)
            or member not in range(4)
            or (sub is None) != (pos != MEMBER)
            or not all(isinstance(x, str) for x in (key, buf, held))
            or not isinstance(named, bool)
            or not isinstance(has_args, bool)
        ):
            raise ValueError("bad tool call state")
        self.pos, self.member, self.key, self.buf, self.named, self.has_args, self.held_args = (
            pos, member, key, buf, named, has_args, held)
        if sub is not None:
            self.sub = self._stream(member)
            self.sub.restore(sub)


class StreamedJsonCalls(ToolParser):
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

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._mode = CONTENT
        self._buf = ""  # at most a partial marker between feeds
        self._index = 0  # the next call's index
        self._call: CallObject | None = None
        self._raw = ""  # the open call's text while its name is not yet sent

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if not text and not self._buf:  # a chunk of reasoning: nothing to read, in any mode
            return Delta()
        return self._run(self._buf + text, False)

    def finish(self) -> Delta:
        text, self._buf = self._buf, ""
        return self._run(text, True)

    def _run(self, buf: str, final: bool) -> Delta:
        self._buf = ""
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        while True:
            mode = self._mode
            if mode == BROKEN:
                content.append(buf)
                break
            if mode == CALL and self.end is None:
                buf = self._read_object(buf, content, calls, final)
                if self._mode == CALL:
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
                if self._mode == CALL and (pos != -1 or final):
                    self._end_call(content, truncated=pos == -1)
                if self._mode == BROKEN:
                    buf = rest
                    continue
            if pos == -1:
                self._buf = rest
                break
            buf = rest[len(marker) :]
            if mode != CALL:
                self._open_call()
        return Delta(content="".join(content), tool_calls=calls)

    def _open_call(self) -> None:
        self._mode = CALL
        self._call = self._new_call()
        self._raw = self.start

    def _new_call(self) -> CallObject:
        return CallObject(self.ensure_ascii, self.args_keys, stop_at_close=self.end is None, args_opts=self.args_opts)

    def _read_object(self, buf: str, content: list[str], calls: list[ToolCallDelta], final: bool) -> str:
        """A call ended by its object's close: the text after it is returned."""
        used = self._feed_call(buf, content, calls)
        if self._mode == CALL and (self._call.complete or final):
            self._end_call(content, truncated=not self._call.complete)
        return "" if self._mode == BROKEN else buf[used:]

    def _feed_call(self, piece: str, content: list[str], calls: list[ToolCallDelta]) -> int:
        call = self._call
        name, args, used = call.feed(piece)
        if name is None and not call.named:
            self._raw += piece[:used]
        if name is not None:
            calls.append(ToolCallDelta(self._index, name=name, arguments=args))
            self._raw = ""
        elif args:
            calls.append(ToolCallDelta(self._index, arguments=args))
        if call.broken is not None:
            self._break(call.broken, content)
        return used

    def _end_call(self, content: list[str], truncated: bool) -> None:
        """The call's text ended: at its end marker, or (``truncated``) at the output's end."""
        call = self._call
        if call.complete or (truncated and call.named):
            self._mode, self._call, self._raw = BETWEEN, None, ""
            self._index += 1
        else:
            self._break("", content)

    def _break(self, tail: str, content: list[str]) -> None:
        """Stop parsing: a call not yet opened is content from its start marker; an opened one
        stands, and the text from the breaking byte (``tail``) is content."""
        content.append(tail if self._call.named else self._raw)
        self._mode, self._call, self._raw = BROKEN, None, ""

    def snapshot(self) -> Any:
        return [self._mode, self._buf, self._index, self._raw,
                self._call.snapshot() if self._call is not None else None]

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, list) or len(snap) != 5:
            raise ValueError("bad tool parser state")
        mode, buf, index, raw, call = snap
        if (
            mode not in (CONTENT, BETWEEN, CALL, BROKEN)
            or not isinstance(buf, str)
            or not isinstance(raw, str)
            or not isinstance(index, int)
            or index < 0
            or (call is None) != (mode != CALL)
        ):
            raise ValueError("bad tool parser state")
        self._mode, self._buf, self._index, self._raw = mode, buf, index, raw
        self._call = None
        if call is not None:
            self._call = self._new_call()
            self._call.restore(call)


PROSE = 4  # a bare-JSON family's text before its first call (held: content is null once a call is found)


class StreamedBareJsonCalls(ToolParser):
    """Llama 3.x/4 calls: every ``{`` outside a call opens a ``{"name", "arguments" |
    "parameters"}`` object and the object's ``}`` ends it; prose is held until a call's name is
    sent (then it is dropped: the one-shot content is null) and dropped between calls. A ``{``
    glued to the previous call's ``}`` is skipped, as vLLM skips it. The first of
    ``arguments``/``parameters`` written is the arguments (vLLM prefers ``arguments``)."""

    args_keys: ClassVar[tuple[str, ...]] = ("arguments", "parameters")
    ensure_ascii: ClassVar[bool] = False
    streams_arguments = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._mode = PROSE
        self._held = ""  # prose before the first call; the open call's text until it is named
        self._index = 0
        self._call: CallObject | None = None
        self._glued = False  # the previous call's object just closed

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        i, n = 0, len(text)
        while i < n:
            if self._mode == BROKEN:
                content.append(text[i:])
                break
            if self._mode == CALL:
                i += self._feed_call(text[i:], content, calls)
                continue
            if self._glued:
                self._glued = False
                if text[i] == "{":
                    i += 1
                    continue
            j = text.find("{", i)
            if self._mode == PROSE:
                self._held += text[i : n if j == -1 else j]
            if j == -1:
                break
            self._mode, i = CALL, j
            self._call = CallObject(self.ensure_ascii, self.args_keys, stop_at_close=True)
        return Delta(content="".join(content), tool_calls=calls)

    def _feed_call(self, text: str, content: list[str], calls: list[ToolCallDelta]) -> int:
        call = self._call
        name, args, used = call.feed(text)
        if name is None and not call.named:
            self._held += text[:used]
        if name is not None:
            calls.append(ToolCallDelta(self._index, name=name, arguments=args))
            self._held = ""
        elif args:
            calls.append(ToolCallDelta(self._index, arguments=args))
        if call.broken is not None:
            content.append(call.broken if call.named else self._held)
            self._mode, self._call, self._held = BROKEN, None, ""
        elif call.complete:
            self._mode, self._call, self._glued = BETWEEN, None, True
            self._index += 1
        return used

    def finish(self) -> Delta:
        """Prose with no call is the content; a truncated call stands once named."""
        held, self._held = self._held, ""
        if self._mode == CALL and self._call.named:
            held = ""
        if self._mode in (PROSE, CALL):
            self._mode, self._call = BROKEN, None
            return Delta(content=held)
        return Delta()

    def snapshot(self) -> Any:
        return [self._mode, self._held, self._index, self._glued,
                self._call.snapshot() if self._call is not None else None]

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, list) or len(snap) != 5:
            raise ValueError("bad tool parser state")
        mode, held, index, glued, call = snap
        if (
            mode not in (PROSE, BETWEEN, CALL, BROKEN)
            or not isinstance(held, str)
            or not isinstance(index, int)
            or index < 0
            or not isinstance(glued, bool)
            or (call is None) != (mode != CALL)
        ):
            raise ValueError("bad tool parser state")
        self._mode, self._held, self._index, self._glued = mode, held, index, glued
        self._call = None
        if call is not None:
            self._call = CallObject(self.ensure_ascii, self.args_keys, stop_at_close=True)
            self._call.restore(call)
