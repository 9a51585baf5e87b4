"""Incremental streaming for the XML/key-value tag families (Qwen3-Coder ``<parameter=k>``,
GLM ``<arg_key>``/``<arg_value>``, MiniMax-M2 ``<parameter name="k">``), as a subclass of the tag
engine's parser.

The whole-call engine holds a call's name and raw arguments until the call closes. Here a call
opens as soon as its name is complete and accepted (the one-shot answer keeps every such call),
with ``{``; each parameter follows when its key is read and its type known from the tool's
schema: a value that stays a string streams as it arrives (JSON-escaped, one wrapping newline
trimmed where the family trims it); a value the schema may coerce (integer, object, …) is held
to its end and sent coerced. The call's end sends ``}``. The bytes add up to the one-shot
``json.dumps`` of the coerced parameters. A call the engine cannot name from its markup (JSON
call bodies, an empty name) is sent whole at its end, as in ``whole`` mode.

A family whose arguments are the text of a section (PLaMo-3's JSON) sends that text as written,
stripped (``StreamedTagText``). Where the tool's schema coerces a value (a number written as a
string, …) the one-shot answer re-serializes the arguments; such a call streams as written.

Malformed output, the documented answer: a repeated key is sent again (a JSON parser keeps its
last value, as the one-shot answer does, at the first one's place); a value left
unclosed when the call ends (or the output is cut) is closed if it was streaming and dropped if
held, so the arguments stay valid JSON (the one-shot answer drops it).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import NamedTuple

import msgspec

from tokenbridge.parsers.base import Delta, ToolCallDelta
from tokenbridge.parsers.engine.json_calls import CallObject, CallObjectState, OpenCall
from tokenbridge.parsers.engine.schema import coerce_string, schema_types, stays_string, tool_properties
from tokenbridge.parsers.engine.tags import TagState, TagToolParser

# Where the argument reader is in the call's markup.
OUT, KEY, GAP, VALUE = range(4)
# What becomes of the value being read.
SKIP, HOLD, STREAM = range(3)


class LiveCall(msgspec.Struct, array_like=True):
    """The call being streamed: where the reader is in its markup, and the value being read."""

    index: int
    name: str
    where: int = OUT
    key: str = ""
    fate: int = SKIP
    held: str = ""  # a coerced value so far, or a trailing newline that may be trimmed
    started: bool = False
    members: int = 0  # the parameters sent or being sent


class StreamedTagState(TagState):
    live: LiveCall | None = None
    call: CallObjectState | None = None  # a JSON call body's parse position (``StreamedTagBody``)


class ArgSyntax(NamedTuple):
    """One family's parameter markup, as the literal events that open and close keys and values."""

    key_open: str
    key_close: tuple[str, ...]
    value_open: str | None  # None: the value starts right after the key
    value_close: str
    next_key_closes_value: bool
    trim_newline: bool
    strip_key: bool
    quoted_key: bool = False  # the key may be written "k" or 'k' (the quotes are not part of it)


QWEN_PARAMS = ArgSyntax("<parameter=", (">",), None, "</parameter>", True, True, False)
VERBATIM_PARAMS = ArgSyntax("<parameter=", (">",), None, "</parameter>", True, False, False)
GLM_ARGS = ArgSyntax("<arg_key>", ("</arg_key>",), "<arg_value>", "</arg_value>", False, False, True)
MINIMAX_PARAMS = ArgSyntax("<parameter name=", ('">', "'>", ">"), None, "</parameter>", True, False, True, True)


class StreamedTagArgs(TagToolParser):
    """The tag engine's parser, streaming; subclassed with the family's class and ``syntax``."""

    syntax: ArgSyntax
    streams_arguments = True
    State = StreamedTagState
    Live: type[LiveCall] = LiveCall  # the open call's reader state
    opening = "{"  # the arguments' first bytes, sent with the name

    # -- events --------------------------------------------------------------------------------

    def _event(self, kind: str, value: str, out: Delta) -> None:
        if self.suppress or kind in ("text", "name"):
            super()._event(kind, value, out)
            return
        if kind == "call_start":
            self._end_live(out)
            super()._event(kind, value, out)
            return
        if self.live is None and self.slot is not None and not self.slot[1] and kind in ("arg", "call_end"):
            self._open_live(out)
        if self.live is None:
            super()._event(kind, value, out)
        elif kind == "arg":
            self._arg(value, out)
        else:
            self._end_live(out)

    def _close_slot(self, out: Delta) -> None:
        if self.live is not None:
            self._end_live(out)
        else:
            super()._close_slot(out)

    def _open_live(self, out: Delta) -> None:
        """The name is complete: open the call if the one-shot answer will keep it."""
        name = self.slot[0].strip()
        if not name or not self._accept(name):
            return
        self.slot = None
        self.seen_tool = True
        if not self.named:
            self.named = True
            self.deferred = ""
        self.live = self.Live(self.n_calls, name)
        self.n_calls += 1
        out.tool_calls.append(ToolCallDelta(index=self.live.index, name=name, arguments=self.opening))
        if not self.resolved:
            self._resolve_with_calls(out)

    def _send(self, text: str, out: Delta) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(index=self.live.index, arguments=text))

    def _arg(self, value: str, out: Delta) -> None:
        live, syn = self.live, self.syntax
        where = live.where
        if value == syn.key_open and (where == OUT or (where == VALUE and syn.next_key_closes_value)):
            if where == VALUE:
                self._end_value(out)
            live.where, live.key = KEY, ""
        elif where == KEY:
            if value in syn.key_close:
                live.key = self._key(live.key + (value[:-1] if syn.quoted_key else ""))
                if syn.value_open is None:
                    self._begin_value(out)
                else:
                    live.where = GAP
            else:
                live.key += value
        elif where == GAP:
            if value == syn.value_open:
                self._begin_value(out)
            elif value.strip():
                live.where = OUT  # not a key/value pair: the one-shot answer skips it
        elif where == VALUE:
            if value == syn.value_close:
                self._end_value(out)
            else:
                self._value_text(value, out)

    def _key(self, raw: str) -> str:
        syn = self.syntax
        key = raw.strip() if syn.strip_key else raw.lstrip()
        if syn.quoted_key and len(key) > 1 and key[0] in "\"'" and key[-1] == key[0]:
            key = key[1:-1].strip()
        return key

    def _begin_value(self, out: Delta) -> None:
        live = self.live
        key = live.key
        live.where, live.held, live.started = VALUE, "", False
        if not key and self.syntax.quoted_key:  # a nameless parameter: the one-shot answer skips it
            live.fate = SKIP
            return
        live.fate = STREAM if stays_string(self.tools, live.name, key) else HOLD
        sep = ", " if live.members else ""
        live.members += 1
        if live.fate == STREAM:
            self._send(f'{sep}{encode_basestring(key)}: "', out)

    def _value_text(self, text: str, out: Delta) -> None:
        live = self.live
        if live.fate != STREAM:
            if live.fate == HOLD:
                live.held += text
            return
        if self.syntax.trim_newline:
            if not text:
                return
            if not live.started:
                live.started = True
                text = text[1:] if text.startswith("\n") else text
            text = live.held + text  # a newline held back: it may be the trimmed last one
            live.held = "\n" if text.endswith("\n") else ""
            text = text[: len(text) - len(live.held)]
        self._send(encode_basestring(text)[1:-1], out)

    def _end_value(self, out: Delta) -> None:
        live = self.live
        if live.fate == STREAM:
            self._send('"', out)
        elif live.fate == HOLD:
            raw = live.held
            if self.syntax.trim_newline:
                raw = raw[1:] if raw.startswith("\n") else raw
                raw = raw[:-1] if raw.endswith("\n") else raw
            prop = tool_properties(self.tools, live.name).get(live.key)
            value = json.dumps(coerce_string(raw, schema_types(prop)), ensure_ascii=False)
            sep = ", " if live.members > 1 else ""
            self._send(f"{sep}{encode_basestring(live.key)}: {value}", out)
        live.where, live.fate, live.held = OUT, SKIP, ""

    def _end_live(self, out: Delta) -> None:
        """The call ended: an open streaming value is closed, a held one dropped."""
        live = self.live
        if live is None:
            return
        if live.where == VALUE and live.fate == STREAM:
            self._send('"', out)
        elif live.where == VALUE and live.fate == HOLD:
            live.members -= 1
        self._send("}", out)
        self.live = None


class StreamedTagText(StreamedTagArgs):
    """Arguments that are the text of the family's arguments section, as written: leading
    whitespace dropped, trailing whitespace held until more text shows it is not the end
    (the one-shot answer strips the section); an empty section is ``{}``."""

    opening = ""

    def _json_args(self, text: str, out: Delta) -> None:
        """The section's text as it comes (the engine's hold of a closing bracket only orders
        its events; the text is the same)."""
        self._event("arg", text, out)

    def _arg(self, value: str, out: Delta) -> None:
        live = self.live
        text = live.held + value
        if not live.started:
            text = text.lstrip()
            if not text:
                return
            live.started = True
        body = text.rstrip()
        live.held = text[len(body):]
        self._send(body, out)

    def _end_live(self, out: Delta) -> None:
        if self.live is None:
            return
        if not self.live.started:
            self._send("{}", out)
        self.live = None


class StreamedTagBody(OpenCall, StreamedTagText):
    """Call bodies that are one JSON ``{"name": …, "args": {…}}`` object (Inkling's tool blocks):
    the call opens when the object's name closes, and its arguments object streams as written
    (the one-shot answer keeps it verbatim). A body that breaks before its name is decided whole
    at its end, as in ``whole`` mode; one that breaks after it keeps what was sent. The name is
    the object's own ``"name"`` member (the one-shot answer takes the first ``"name": "…"``
    text, which arguments written before it may hold)."""

    body_args_key = "args"

    def _new_call(self) -> CallObject:
        return CallObject(False, (self.body_args_key,), stop_at_close=True, args_first="{", missing_args="{}",
                          args_opts={"verbatim": True, "strict": False})

    def _event(self, kind: str, value: str, out: Delta) -> None:
        if self.suppress or kind in ("text", "name"):
            TagToolParser._event(self, kind, value, out)
        elif kind == "call_start":
            self._end_live(out)
            TagToolParser._event(self, kind, value, out)
            self._call = self._new_call()
        elif kind == "arg" and self._call is not None:
            if self.live is None:
                self.slot[1] += value  # the whole-call answer, should the body break before its name
            self._feed_call(value, out)
        elif self.live is not None:
            if kind != "arg":
                self._end_live(out)
        else:
            self._call = None
            TagToolParser._event(self, kind, value, out)

    def _feed_call(self, text: str, out: Delta) -> None:
        body = self._call
        name, args, _ = body.feed(text)
        if name is not None:
            self.slot[0] = name
            self._open_live(out)
        if self.live is not None and args:
            self._send(args, out)
        if body.broken is not None or body.complete or (name is not None and self.live is None):
            self._call = None

    def _end_live(self, out: Delta) -> None:
        self.live, self._call = None, None


def streamed_tag_parser(cls: type[TagToolParser], syntax: ArgSyntax | None,
                        base: type[StreamedTagArgs] | None = None) -> type[TagToolParser]:
    """``cls`` for ``--tool-call-streaming incremental``: arguments sent as written (``syntax``
    None: the arguments section's text, ``StreamedTagText``; or the streaming ``base`` given)."""
    base = base or (StreamedTagArgs if syntax is not None else StreamedTagText)
    return type(f"{cls.__name__.removesuffix('ToolParser')}StreamedCalls", (base, cls),
                {"syntax": syntax, "__doc__": f"{cls.__doc__} Calls streamed as written.",
                 "__module__": cls.__module__})
