"""One call's arguments object, written member by member for a family's incremental reader.

The family's reader finds the keys and values in its markup (Poolside's ``<arg_key>`` pairs,
FunctionGemma's ``key:<escape>…<escape>``, Step-3's ``<steptml:parameter>``); this base writes
the JSON. A value either streams as text, JSON-escaped as it arrives, or is held to its end and
sent as the one-shot answer converts it (``_converted``). The family decides which when the key
is read (``_begin_value``) or, where only the value's own text can tell, as it arrives
(``_is_text``). The bytes add up to the one-shot answer's ``json.dumps`` of the arguments; a
value still open when the call ends is closed if it streams and dropped if held, so the
arguments stay valid JSON.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import ClassVar

from tokenbridge.parsers.base import Delta, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix


class StreamedArguments(ToolParser):
    """The base of an incremental reader whose ``State`` declares ``buf`` (undecided text),
    ``index`` (the open call's), ``members`` (its arguments sent), ``key``, ``value`` (a held
    value, or the space a stripped one holds back) and ``streaming`` (plus ``started`` where
    ``strips_values``). The family's ``_step`` reads from the text and returns the rest."""

    streams_arguments = True
    #: A streamed value is sent stripped (Step-3): leading space dropped, trailing space held
    #: until more text follows it.
    strips_values: ClassVar[bool] = False

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta(tool_calls=[])
        buf, self.buf = self.buf + text, ""
        while buf:
            buf = self._step(buf, out)
        return out

    def _step(self, buf: str, out: Delta) -> str:
        raise NotImplementedError

    def _until(self, buf: str, markers: tuple[str, ...]) -> tuple[int, str | None]:
        """The first of ``markers`` in ``buf``; without one, a partial one at its end is held."""
        at, marker = find_first(buf, markers)
        if marker is None:
            keep = partial_suffix(buf, markers)
            self.buf = buf[len(buf) - keep:]
        return at, marker

    def _send(self, text: str, out: Delta) -> None:
        if text:
            out.tool_calls.append(ToolCallDelta(self.index, arguments=text))

    def _open_call(self, name: str, out: Delta) -> None:
        self.index += 1
        self.members = 0
        out.tool_calls.append(ToolCallDelta(self.index, name=name, arguments="{"))

    def _member(self, value: str) -> str:
        """``value`` (JSON text, or the start of a string) as the next member, key first."""
        sep = ", " if self.members else ""
        self.members += 1
        return f"{sep}{encode_basestring(self.key)}: {value}"

    def _begin_value(self, key: str, streams: bool, out: Delta) -> None:
        self.key, self.value, self.streaming = key, "", streams
        if self.strips_values:
            self.started = False
        if streams:
            self._send(self._member('"'), out)

    def _value_text(self, text: str, out: Delta) -> None:
        if not self.streaming:
            self.value += text
            if self._is_text(self.value):
                self.streaming = True
                self._send(self._member(encode_basestring(self.value)[:-1]), out)
                self.value = ""
            return
        if self.strips_values:
            text = self.value + text
            if not self.started:
                text = text.lstrip()
            body = text.rstrip()
            self.value = text[len(body):]
            if not body:
                return
            self.started = True
            text = body
        self._send(encode_basestring(text)[1:-1], out)

    def _is_text(self, held: str) -> bool:
        """True when a held value can only be a string, whatever follows: it streams from here."""
        return False

    def _converted(self, raw: str) -> str | None:
        """The JSON text the one-shot answer makes of a held value (None: it drops the member)."""
        raise NotImplementedError

    def _end_value(self, out: Delta) -> None:
        if self.streaming:
            self._send('"', out)
        else:
            value = self._converted(self.value)
            if value is not None:
                self._send(self._member(value), out)
        self.key, self.value, self.streaming = "", "", False

    def _close_call(self, in_value: bool, out: Delta) -> None:
        """The call's body ended (``in_value``: inside a value, closed if it streams)."""
        if in_value and self.streaming:
            self._send('"', out)
        self._send("}", out)
        self.key, self.value, self.streaming = "", "", False
