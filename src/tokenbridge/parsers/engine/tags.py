"""vLLM's declarative tag engine, run incrementally: tool calls written as marker-delimited tags.

vLLM 0.33 parses these families with one engine: a lexer of literal terminals, a state machine
``(state, terminal) -> (next state, events)``, and per-family argument converters. Its
non-streaming answer is a single pass of that machine, so this is the same machine run
incrementally: the lexer holds back only a possible partial terminal, a call's name and raw
arguments are held until the call can no longer change (next call start or ``finish``), and
content whose fate depends on later text is held back too:

* with tool calls, content is ``strip()``-ed (leading whitespace is held until decided);
* text after the first call is dropped once any call emitted a name (vLLM never re-reads it),
  so it is held until a call succeeds (drop) or the output ends (keep).

Families differ only in data (:class:`Family`): terminals, transitions, converter, flags.
"""

from __future__ import annotations

import hashlib
import sys
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.json import json_args_pieces, name_and_args_from_json
from tokenbridge.parsers.engine.lexer import cut_truncated_marker, special_token_texts, truncated_marker_start
from tokenbridge.parsers.engine.schema import fix_arg_types, tool_function, tool_properties


# States (vLLM ParserState names).
CONTENT, REASONING, PREAMBLE, NAME, ARGS, BETWEEN = (
    "CONTENT", "REASONING", "TOOL_PREAMBLE", "TOOL_NAME", "TOOL_ARGS", "TOOL_BETWEEN",
)
# Inkling's block header: text there is held and only becomes content if the block ends.
HEADER = "MESSAGE_HEADER"
TOOL_STATES = frozenset({PREAMBLE, NAME, ARGS, BETWEEN})
PLAIN_STATES = frozenset({CONTENT, REASONING})

# Events (vLLM EventType).
TEXT, REASONING_START, REASONING_END, CALL_START, CALL_END, ARG = (
    "text", "reasoning_start", "reasoning_end", "call_start", "call_end", "arg",
)
REASONING_EVENTS = frozenset({REASONING_START, REASONING_END})
DROP = "__DROP__"
Transitions = dict[tuple[str, str], tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class Family:
    """One vLLM parser-engine grammar, as far as the tool pass needs it."""

    name: str
    terminals: dict[str, tuple[str, ...]]
    transitions: Transitions
    arg_converter: Callable[[str, bool], str] | None = None
    tool_args_json: bool = True
    validate_tool_names: bool = False
    strip_name: bool = False
    strip_content_with_tools: bool = True
    drop_ws_content_before_tools: bool = True
    content_events: dict[str, str] = field(
        default_factory=lambda: {CONTENT: TEXT, REASONING: "reasoning", NAME: "name", ARGS: ARG}
    )
    #: special tokens that are pieces of the family's markers (never dropped as strays)
    preserve_tokens: frozenset[str] = frozenset()
    #: keys of a JSON call body that hold the arguments (name-from-JSON path)
    json_args_keys: tuple[str, ...] = ("arguments", "parameters")
    #: the arguments text itself is the JSON (no converter, kept unparsed) - PLaMo-3
    raw_json_args: bool = False
    #: converter that needs the call's schema ``properties`` (MiniMax-M3); it replaces
    #: ``arg_converter`` and gets the name of the first call with the same raw arguments
    schema_arg_converter: Callable[[str, dict], str] | None = None
    #: text after tool blocks stays content (Inkling's blocks may follow each other)
    keep_text_after_calls: bool = False
    #: prefix of every marker; a truncated marker at the end of content or of a name, or
    #: after the arguments, is cut off (PLaMo-3)
    unfinished_marker: str | None = None

    def literals(self) -> dict[str, str]:
        return {lit: name for name, lits in self.terminals.items() for lit in lits}

    def reasoning_markup(self) -> frozenset[str]:
        """Terminals that only open/close reasoning (passed through as text when no reasoning
        parser is configured); one shared use disables the bypass, as in vLLM."""
        markers = {
            term
            for (state, term), (nxt, _) in self.transitions.items()
            if REASONING in (state, nxt) and nxt not in TOOL_STATES
        }
        for (state, term), (nxt, events) in self.transitions.items():
            if term in markers and (
                state not in PLAIN_STATES
                or nxt not in PLAIN_STATES
                or not REASONING_EVENTS.issuperset(events)
            ):
                return frozenset()
        return frozenset(markers)


def to(nxt: str, *events: str) -> tuple[str, tuple[str, ...]]:
    return (nxt, events)


_NAME_IN_JSON = re.compile(r'"name"\s*:\s*"([^"]*)"')


class TagState(ParserState):
    """The engine's position; the comments say what is held back."""

    buf: str = ""  # lexer hold-back: a possible partial terminal
    state: str = CONTENT
    tool_index: int = -1
    slot: list[str] | None = None  # [name, args] of the open call
    args_buf: str = ""
    args_depth: int = 0
    args_in_str: bool = False
    args_esc: bool = False
    seen_tool: bool = False
    pending: str = ""  # content held: leading block or trailing whitespace
    content_out: bool = False  # some content already emitted
    deferred: str = ""  # text after the first call start, kept only if no call succeeds
    named: bool = False  # some call emitted a name (vLLM then drops text after calls)
    n_calls: int = 0
    resolved: bool = False  # content final (a call succeeded)
    header: str = ""  # text of an open Inkling block header
    hold: str = ""  # content that may be a truncated marker (or blank so far)
    hold_nonws: bool = False  # some non-blank content passed the marker hold
    arg_digests: list[list[str]] = []  # [digest of raw args, name] per closed call


class TagToolParser(ToolParser):
    """Runs one :class:`Family` incrementally; see the module docstring for what is held back.

    Every family here is one of vLLM's engine adapters; those with an xgrammar structural
    tag do not force ``required``/named choices into JSON (strict tool calling).
    """

    engine_based = True
    supports_required_and_named = False
    family: Family
    State = TagState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        fam = self.family_for(ctx)
        self.fam = fam
        self.tools = ctx.tools
        lits = fam.literals()
        for text in self._drop_texts(ctx, fam):
            lits.setdefault(text, DROP)
        self.lits = lits
        self.lits_by_first: dict[str, list[str]] = {}
        for lit in sorted(lits, key=len, reverse=True):
            self.lits_by_first.setdefault(lit[0], []).append(lit)
        self.max_lit = max(map(len, lits), default=0)
        self.prefixes = frozenset(lit[:i] for lit in lits for i in range(1, len(lit)))
        reasoning_parser = getattr(ctx, "reasoning_parser", None)
        self.bypass = fam.reasoning_markup() if not reasoning_parser else frozenset()
        # tool_choice "none" with tools: vLLM's engine parses calls out of the text but emits
        # none of them, and the content around them is kept as is (no whitespace rules).
        self.suppress = ctx.tool_choice == "none" and bool(ctx.tools)
        marker = fam.unfinished_marker
        self.marker_lits = tuple(lit for lit in fam.literals() if marker and lit.startswith(marker))
        self.load(self.State())

    @classmethod
    def family_for(cls, ctx: ParseContext) -> Family:
        return cls.family

    @staticmethod
    def _drop_texts(ctx: ParseContext, fam: Family) -> list[str]:
        """Special tokens that are no terminal of the family vanish from the text (vLLM drops
        them in every state)."""
        return special_token_texts(ctx.vocab, set(fam.literals()) | fam.preserve_tokens)

    # -- state ---------------------------------------------------------------------------------

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        out = Delta()
        self.buf += text
        self._lex(out, final=False)
        return out

    def finish(self) -> Delta:
        out = Delta()
        self._lex(out, final=True)
        if self.args_buf:
            self._event(ARG, self.args_buf, out)
            self.args_buf = ""
        if self.state in TOOL_STATES:
            self.state = CONTENT
        elif self.state == REASONING:
            self.state = CONTENT
        elif self.state == HEADER:
            header, self.header = self.header, ""
            if header:
                self._event(TEXT, header, out)
            self.state = CONTENT
        self._close_slot(out)
        self._flush_content(out)
        self._release_hold(out)
        return out

    def _lex(self, out: Delta, final: bool) -> None:
        buf, i, n = self.buf, 0, len(self.buf)
        text_start = 0
        while i < n:
            cands = self.lits_by_first.get(buf[i])
            if not cands:
                i += 1
                continue
            if not final and n - i < self.max_lit and buf[i:] in self.prefixes:
                break
            match = next((lit for lit in cands if buf.startswith(lit, i)), None)
            if match is None:
                i += 1
                continue
            if text_start < i:
                self._on_text(buf[text_start:i], out)
            self._on_terminal(self.lits[match], match, out)
            i += len(match)
            text_start = i
        if text_start < i:
            self._on_text(buf[text_start:i], out)
        self.buf = buf[i:]

    def _on_terminal(self, term: str, value: str, out: Delta) -> None:
        tr = self.fam.transitions.get((self.state, term))
        if tr is None:
            if term != DROP:
                self._on_text(value, out)
            return
        if term in self.bypass:
            self._on_text(value, out)
            return
        nxt, events = tr
        if self.state == ARGS and nxt != ARGS and self.args_buf:
            self._event(ARG, self.args_buf, out)
            self.args_buf = ""
        header = None
        if self.state == HEADER:
            header, self.header = self.header, ""
        self.state = nxt
        for ev in events:
            if ev == CALL_START:
                self.tool_index += 1
            text = header if header is not None and ev == TEXT else value
            if ev == TEXT and not text:
                continue
            self._event(ev, text, out)
        if nxt == ARGS:
            self.args_depth, self.args_in_str, self.args_esc = 0, False, False

    def _on_text(self, text: str, out: Delta) -> None:
        if self.state == HEADER:
            self.header += text
            return
        if self.state == ARGS:
            if self.fam.tool_args_json:
                self._json_args(text, out)
            else:
                self._event(ARG, text, out)
            return
        kind = self.fam.content_events.get(self.state)
        if kind is not None:
            self._event(kind, text, out)

    def _json_args(self, text: str, out: Delta) -> None:
        pieces, self.args_buf, self.args_depth, self.args_in_str, self.args_esc = json_args_pieces(
            text, self.args_buf, self.args_depth, self.args_in_str, self.args_esc
        )
        for piece in pieces:
            self._event(ARG, piece, out)

    # -- events --------------------------------------------------------------------------------

    def _event(self, kind: str, value: str, out: Delta) -> None:
        if self.suppress:
            if kind == TEXT:
                self._out_content(value, out)
            return
        if kind == TEXT:
            self._content(value, out)
        elif kind == CALL_START:
            self._close_slot(out)
            self.seen_tool = True
            self.slot = ["", ""]
        elif kind in ("name", ARG, CALL_END):
            self.seen_tool = True
            if self.slot is None:
                self.slot = ["", ""]
            if kind == "name":
                self.slot[0] += value
            elif kind == ARG:
                self.slot[1] += value

    def _content(self, text: str, out: Delta) -> None:
        if self.fam.keep_text_after_calls:
            self._content_kept(text, out)
            return
        if self.seen_tool:
            if not self.named:
                self.deferred += text
            return
        self.pending += text
        if not self.content_out and (not self.pending.strip() or self.pending[0].isspace()):
            return
        body = self.pending.rstrip()
        if body:
            self._out_content(body, out)
            self.content_out = True
            self.pending = self.pending[len(body):]

    def _content_kept(self, text: str, out: Delta) -> None:
        """Content when text after calls is kept: blank text before the first call is held
        (dropped if a call gets a name), as is what follows it until that is known."""
        if self.content_out:
            self._out_content(text, out)
        elif not self.seen_tool:
            self.pending += text
            if self.pending.strip():
                self._out_content(self.pending, out)
                self.pending, self.content_out = "", True
        else:
            self.deferred += text
            self._release_kept(out)

    def _release_kept(self, out: Delta) -> None:
        if self.named and not self.content_out:
            self.pending = ""
            if self.deferred.strip():
                self._out_content(self.deferred, out)
                self.deferred, self.content_out = "", True

    def _out_content(self, text: str, out: Delta) -> None:
        """Emit content; with ``unfinished_marker``, hold what may be a truncated marker at
        the end (and blank content, which vanishes when calls were made)."""
        if not self.marker_lits:
            out.content += text
            return
        buf = self.hold + text
        cut = truncated_marker_start(buf, self.fam.unfinished_marker or "", self.marker_lits)
        if not self.hold_nonws and not buf[:cut].strip():
            self.hold = buf
            return
        out.content += buf[:cut]
        self.hold = buf[cut:]
        self.hold_nonws = True

    def _without_truncated_marker(self, text: str) -> str:
        return cut_truncated_marker(text, self.fam.unfinished_marker, self.marker_lits, self.ctx.vocab)

    def _release_hold(self, out: Delta) -> None:
        text, self.hold = self._without_truncated_marker(self.hold), ""
        if not self.hold_nonws and not text.strip() and self.n_calls:
            drop = self.fam.drop_ws_content_before_tools
            text = "" if drop or self.fam.strip_content_with_tools else text
        out.content += text

    def _close_slot(self, out: Delta) -> None:
        slot, self.slot = self.slot, None
        if slot is None:
            return
        name, args = slot
        fam = self.fam
        if fam.schema_arg_converter is not None:
            digest = hashlib.blake2b(args.encode(), digest_size=8).hexdigest()
            self.arg_digests.append([digest, name])
            schema_name = next(n for d, n in self.arg_digests if d == digest)
        if fam.unfinished_marker:
            name = self._without_truncated_marker(name)
            cut = args.rfind(fam.unfinished_marker)
            if cut >= 0:
                try:
                    json.loads(args[:cut])
                except ValueError:
                    pass
                else:
                    args = args[:cut]
        if self.fam.strip_name:
            name = name.strip()
        cand = name or self._json_name(args)
        if cand and self.fam.strip_name:
            cand = cand.strip()
        if cand and self._accept(cand):
            name = cand
            if not self.named:
                self.named = True
                if fam.keep_text_after_calls:
                    self._release_kept(out)
                else:
                    self.deferred = ""
        if not name and not args:
            return
        name = name.strip()
        if not name and args.strip():
            name, args_json = name_and_args_from_json(args, fam.json_args_keys)
        elif args.strip():
            conv = fam.arg_converter
            try:
                if fam.schema_arg_converter is not None:
                    props = tool_properties(self.tools, schema_name.strip())
                    args_json = fam.schema_arg_converter(args, props)
                elif conv:
                    args_json = conv(args, False)
                elif fam.raw_json_args:
                    args_json = args.strip()
                else:
                    args_json = name_and_args_from_json(args, fam.json_args_keys)[1]
            except (ValueError, TypeError):
                args_json = name_and_args_from_json(args, fam.json_args_keys)[1]
        else:
            args_json = "{}"
        if not isinstance(name, str) or not self._accept(name):
            return
        args_json = fix_arg_types(args_json, name, self.tools)
        out.tool_calls.append(ToolCallDelta(index=self.n_calls, name=name, arguments=args_json))
        self.n_calls += 1
        if self.named and not self.resolved:
            self._resolve_with_calls(out)

    @staticmethod
    def _json_name(args: str) -> str:
        m = _NAME_IN_JSON.search(args)
        return m.group(1) if m else ""

    def _accept(self, name: str) -> bool:
        if not name:
            return False
        if not self.fam.validate_tool_names or not self.tools:
            return True
        return tool_function(self.tools, name) is not None

    def _resolve_with_calls(self, out: Delta) -> None:
        """A call succeeded and later text is dropped, so the content is final now."""
        if self.fam.keep_text_after_calls:
            return
        self.resolved = True
        self._out_content(self._final_tail(self.pending), out)
        self.pending = ""

    def _flush_content(self, out: Delta) -> None:
        if self.resolved:
            return
        if self.fam.keep_text_after_calls:
            tail = self.deferred if self.named else self.pending + self.deferred
            self.pending = self.deferred = ""
            if not self.content_out and self.seen_tool and not tail.strip():
                tail = "" if (self.n_calls or not self.named) else tail
            self._out_content(tail, out)
            return
        tail = self.pending + ("" if self.named else self.deferred)
        self.pending = self.deferred = ""
        self._out_content(self._final_tail(tail), out)

    def _final_tail(self, tail: str) -> str:
        """What is left of the content: ``tail`` follows the content emitted so far (which, if
        any, starts and ends with non-whitespace)."""
        strip = self.fam.strip_content_with_tools
        if self.content_out:
            return tail.rstrip() if self.n_calls and strip else tail
        if self.n_calls:
            tail = tail.strip() if strip else tail
            return tail if tail.strip() else ""
        if not tail.strip() and self.seen_tool and self.fam.drop_ws_content_before_tools:
            return ""
        return tail


def family_parser(cls_name: str, family: Family | None = None, chooser=None) -> type[TagToolParser]:
    """A parser class for one grammar (or a ``chooser`` of one per request), in the caller's module."""
    doc = f"vLLM's ``{family.name if family else cls_name}`` grammar."
    attrs: dict[str, Any] = {"__doc__": doc, "__module__": sys._getframe(1).f_globals["__name__"]}
    if family is not None:
        attrs["family"] = family
    if chooser is not None:
        attrs["family_for"] = classmethod(lambda cls, ctx: chooser(ctx))
    return type(cls_name, (TagToolParser,), attrs)
