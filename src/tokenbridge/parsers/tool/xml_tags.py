"""Tool calls written as marker-delimited tags (``<tool_call>``, ``<function=…>``, ``<arg_key>`` …).

vLLM 0.33 parses these families with one declarative engine: a lexer of literal terminals, a
state machine ``(state, terminal) -> (next state, events)``, and per-family argument
converters. Its non-streaming answer is a single pass of that machine, so this module is the
same machine run incrementally: the lexer holds back only a possible partial terminal, a call's
name and raw arguments are held until the call can no longer change (next call start or
``finish``), and content whose fate depends on later text is held back too:

* with tool calls, content is ``strip()``-ed (leading whitespace is held until decided);
* text after the first call is dropped once any call emitted a name (vLLM never re-reads it),
  so it is held until a call succeeds (drop) or the output ends (keep).

Families differ only in data (:class:`Family`): terminals, transitions, converter, flags.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from tokenbridge.parsers.base import Delta, ParseContext, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.text import special_token_texts
from tokenbridge.parsers.tool._common import json_member_object, name_and_args_from_json, thinking_enabled
from tokenbridge.parsers.tool._schema import (
    coerce_string, fix_arg_types, schema_types, tool_function, tool_properties,
)

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


# ── argument converters (raw tag body -> JSON object text) ──────────────────────────────────

_QWEN_PARAM = re.compile(
    r"<\s*parameter\s*=\s*([^>]*)>(.*?)(?:<\s*/\s*parameter\s*>|(?=<\s*parameter\s*=))", re.S
)
_QWEN_PARTIAL = re.compile(r"<\s*parameter\s*=\s*([^>]+)>(.*)$", re.S)


def _trim_one_newline(v: str) -> str:
    if v.startswith("\n"):
        v = v[1:]
    if v.endswith("\n"):
        v = v[:-1]
    return v


def _qwen_params(raw: str, partial: bool, value: Callable[[str], str]) -> str:
    params: dict[str, Any] = {}
    for m in _QWEN_PARAM.finditer(raw):
        params[m.group(1)] = value(m.group(2))
    if partial:
        m = _QWEN_PARTIAL.search(_QWEN_PARAM.sub("", raw))
        if m and m.group(1):
            params[m.group(1)] = value(m.group(2))
    return json.dumps(params, ensure_ascii=False)


def qwen_params(raw: str, partial: bool) -> str:
    """``<parameter=k>\\nv\\n</parameter>`` pairs; one wrapping newline is template markup."""
    return _qwen_params(raw, partial, _trim_one_newline)


def verbatim_params(raw: str, partial: bool) -> str:
    """MiMo's compact ``<parameter=k>v</parameter>``: values kept byte for byte."""
    return _qwen_params(raw, partial, lambda v: v)


_GLM_ARG = re.compile(r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>", re.S)
_GLM_PARTIAL = re.compile(r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*)$", re.S)


def glm_args(raw: str, partial: bool) -> str:
    """``<arg_key>k</arg_key><arg_value>v</arg_value>`` pairs; keys stripped, values verbatim."""
    params: dict[str, Any] = {}
    for m in _GLM_ARG.finditer(raw):
        params[m.group("key").strip()] = m.group("value")
    if partial:
        m = _GLM_PARTIAL.search(_GLM_ARG.sub("", raw))
        if m and m.group("key").strip():
            params[m.group("key").strip()] = m.group("value")
    return json.dumps(params, ensure_ascii=False)


# ── family table ────────────────────────────────────────────────────────────────────────────


def _t(nxt: str, *events: str) -> tuple[str, tuple[str, ...]]:
    return (nxt, events)


def qwen_coder_family(
    name: str,
    think: tuple[str, str] = ("<think>", "</think>"),
    tool: tuple[str, str] = ("<tool_call>", "</tool_call>"),
    arg_converter: Callable[[str, bool], str] = qwen_params,
    **flags: Any,
) -> Family:
    """``<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>``."""
    return Family(
        name=name,
        terminals={
            "THINK_START": (think[0],), "THINK_END": (think[1],),
            "TOOL_START": (tool[0],), "TOOL_END": (tool[1],),
            "FUNC_PREFIX": ("<function=",), "FUNC_END": ("</function>",),
            "PARAM_START": ("<parameter=",), "PARAM_END": ("</parameter>",),
            "CLOSE_ANGLE": (">",),
        },
        transitions={
            (REASONING, "THINK_START"): _t(REASONING),
            (REASONING, "THINK_END"): _t(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): _t(CONTENT),
            (REASONING, "TOOL_START"): _t(PREAMBLE, REASONING_END, CALL_START),
            (CONTENT, "TOOL_START"): _t(PREAMBLE, REASONING_END, CALL_START),
            (CONTENT, "FUNC_PREFIX"): _t(NAME, CALL_START),
            (PREAMBLE, "TOOL_END"): _t(CONTENT, CALL_END),
            (PREAMBLE, "FUNC_PREFIX"): _t(NAME),
            (NAME, "CLOSE_ANGLE"): _t(ARGS),
            (NAME, "FUNC_END"): _t(BETWEEN, CALL_END),
            (NAME, "TOOL_END"): _t(CONTENT, CALL_END),
            (NAME, "TOOL_START"): _t(PREAMBLE, CALL_END, CALL_START),
            (NAME, "FUNC_PREFIX"): _t(NAME, CALL_END, CALL_START),
            (ARGS, "FUNC_END"): _t(BETWEEN, CALL_END),
            (ARGS, "FUNC_PREFIX"): _t(NAME, CALL_END, CALL_START),
            (ARGS, "PARAM_START"): _t(ARGS, ARG),
            (ARGS, "PARAM_END"): _t(ARGS, ARG),
            (BETWEEN, "TOOL_END"): _t(CONTENT),
            (BETWEEN, "TOOL_START"): _t(PREAMBLE, CALL_START),
            (BETWEEN, "FUNC_PREFIX"): _t(NAME, CALL_START),
        },
        arg_converter=arg_converter,
        tool_args_json=False,
        **flags,
    )


def glm_family(name: str, thinking: bool) -> Family:
    """``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`` (GLM-4.5/4.7).

    The reasoning markers exist only while thinking is on (``enable_thinking``/``thinking``).
    """
    think_terms = {"THINK_START": ("<think>",), "THINK_END": ("</think>",)} if thinking else {}
    think_trans = (
        {
            (CONTENT, "THINK_START"): _t(REASONING, REASONING_START),
            (REASONING, "THINK_END"): _t(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): _t(CONTENT),
        }
        if thinking
        else {}
    )
    arg_tags = ("ARG_KEY_START", "ARG_KEY_END", "ARG_VALUE_START", "ARG_VALUE_END")
    return Family(
        name=name,
        terminals={
            **think_terms,
            "TOOL_START": ("<tool_call>",), "TOOL_END": ("</tool_call>",),
            "ARG_KEY_START": ("<arg_key>",), "ARG_KEY_END": ("</arg_key>",),
            "ARG_VALUE_START": ("<arg_value>",), "ARG_VALUE_END": ("</arg_value>",),
        },
        transitions={
            **think_trans,
            (REASONING, "THINK_START"): _t(REASONING),
            (REASONING, "TOOL_START"): _t(NAME, REASONING_END, CALL_START),
            (CONTENT, "TOOL_START"): _t(NAME, CALL_START),
            (NAME, "ARG_KEY_START"): _t(ARGS, ARG),
            (NAME, "TOOL_END"): _t(CONTENT, CALL_END),
            (ARGS, "TOOL_END"): _t(CONTENT, CALL_END),
            **{(ARGS, tag): _t(ARGS, ARG) for tag in arg_tags},
        },
        arg_converter=glm_args,
        tool_args_json=False,
        validate_tool_names=True,
        strip_name=True,
    )


# ── the engine ──────────────────────────────────────────────────────────────────────────────

_NAME_IN_JSON = re.compile(r'"name"\s*:\s*"([^"]*)"')


class TagToolParser(ToolParser):
    """Runs one :class:`Family` incrementally; see the module docstring for what is held back.

    Every family here is one of vLLM's engine adapters; those with an xgrammar structural
    tag do not force ``required``/named choices into JSON (strict tool calling).
    """

    engine_based = True
    supports_required_and_named = False
    family: Family

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
        self._reset()

    @classmethod
    def family_for(cls, ctx: ParseContext) -> Family:
        return cls.family

    @staticmethod
    def _drop_texts(ctx: ParseContext, fam: Family) -> list[str]:
        """Special tokens that are no terminal of the family vanish from the text (vLLM drops
        them in every state)."""
        return special_token_texts(ctx.vocab, set(fam.literals()) | fam.preserve_tokens)

    # -- state ---------------------------------------------------------------------------------

    def _reset(self) -> None:
        self.buf = ""  # lexer hold-back: a possible partial terminal
        self.state = CONTENT
        self.tool_index = -1
        self.slot: list[str] | None = None  # [name, args] of the open call
        self.args_buf = ""
        self.args_depth = 0
        self.args_in_str = False
        self.args_esc = False
        self.seen_tool = False
        self.pending = ""  # content held: leading block or trailing whitespace
        self.content_out = False  # some content already emitted
        self.deferred = ""  # text after the first call start, kept only if no call succeeds
        self.named = False  # some call emitted a name (vLLM then drops text after calls)
        self.n_calls = 0
        self.resolved = False  # content final (a call succeeded)
        self.header = ""  # text of an open Inkling block header
        self.hold = ""  # content that may be a truncated marker (or blank so far)
        self.hold_nonws = False  # some non-blank content passed the marker hold
        self.arg_digests: list[list[str]] = []  # [digest of raw args, name] per closed call

    def snapshot(self) -> Any:
        return [
            self.buf, self.state, self.tool_index, self.slot, self.args_buf, self.args_depth,
            self.args_in_str, self.args_esc, self.seen_tool, self.pending, self.content_out,
            self.deferred, self.named, self.n_calls, self.resolved, self.header, self.hold,
            self.hold_nonws, self.arg_digests,
        ]

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, list) or len(snap) != 19:
            raise ValueError("bad tool parser state")
        (
            self.buf, self.state, self.tool_index, slot, self.args_buf, self.args_depth,
            self.args_in_str, self.args_esc, self.seen_tool, self.pending, self.content_out,
            self.deferred, self.named, self.n_calls, self.resolved, self.header, self.hold,
            self.hold_nonws, digests,
        ) = snap
        self.slot = list(slot) if slot is not None else None
        self.arg_digests = [list(d) for d in digests]

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
        """vLLM holds a top-level closing brace back until more text shows it is not the end;
        the held text can land after a later argument event, so the order is replayed."""
        for ch in text:
            self.args_buf += ch
            if self.args_esc:
                self.args_esc = False
            elif self.args_in_str:
                if ch == "\\":
                    self.args_esc = True
                elif ch == '"':
                    self.args_in_str = False
            elif ch == '"':
                self.args_in_str = True
            elif ch in "{[":
                self.args_depth += 1
            elif ch in "}]":
                if self.args_depth > 0:
                    self.args_depth -= 1
                if self.args_depth == 0:
                    continue
            self._event(ARG, self.args_buf, out)
            self.args_buf = ""

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
        cut = self._marker_cut(buf)
        if not self.hold_nonws and not buf[:cut].strip():
            self.hold = buf
            return
        out.content += buf[:cut]
        self.hold = buf[cut:]
        self.hold_nonws = True

    def _marker_cut(self, text: str) -> int:
        marker = self.fam.unfinished_marker or ""
        i = text.rfind(marker)
        if i >= 0 and self._marker_prefix(text[i:]):
            return i
        for k in range(min(len(marker) - 1, len(text)), 0, -1):
            if marker.startswith(text[-k:]):
                return len(text) - k
        return len(text)

    def _marker_prefix(self, text: str) -> bool:
        return any(len(lit) > len(text) and lit.startswith(text) for lit in self.marker_lits)

    def _cut_unfinished(self, text: str) -> str:
        """``text`` without a trailing truncated marker; vLLM compares token ids, so with a
        tokenizer the cut needs the piece's ids to be a proper prefix of a marker's."""
        marker = self.fam.unfinished_marker
        i = text.rfind(marker) if marker else -1
        if i < 0 or not self._marker_prefix(text[i:]):
            return text
        encode = getattr(self.ctx.vocab, "encode", None)
        if encode is not None:
            ids = list(encode(text[i:]))
            if not any(
                len(full) > len(ids) and full[: len(ids)] == ids
                for full in (list(encode(lit)) for lit in self.marker_lits)
            ):
                return text
        return text[:i]

    def _release_hold(self, out: Delta) -> None:
        text, self.hold = self._cut_unfinished(self.hold), ""
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
            name = self._cut_unfinished(name)
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


def _family_parser(cls_name: str, family: Family | None = None, chooser=None) -> type[TagToolParser]:
    attrs: dict[str, Any] = {"__doc__": f"vLLM's ``{family.name if family else cls_name}`` grammar."}
    if family is not None:
        attrs["family"] = family
    if chooser is not None:
        attrs["family_for"] = classmethod(lambda cls, ctx: chooser(ctx))
    return type(cls_name, (TagToolParser,), attrs)


_QWEN_CODER = qwen_coder_family("qwen3_coder")
_GLM_THINKING = glm_family("glm45", thinking=True)
_GLM_PLAIN = glm_family("glm45", thinking=False)

QwenCoderToolParser = tool_parser(
    "qwen3_coder", "qwen3_xml", "qwen_xml", "qwen_coder", "nemotron", "nemotron_nano",
    family="qwen3_coder",
)(_family_parser("QwenCoderToolParser", _QWEN_CODER))

# Step-3.5/3.7 differ from Qwen3 only in reasoning handling, not in the tool grammar.
Step3p5ToolParser = tool_parser("step3p5", family="qwen3_coder")(
    _family_parser("Step3p5ToolParser", qwen_coder_family("step3p5"))
)

SeedOssToolParser = tool_parser("seed_oss", family="qwen3_coder")(
    _family_parser(
        "SeedOssToolParser",
        qwen_coder_family(
            "seed_oss",
            think=("<seed:think>", "</seed:think>"),
            tool=("<seed:tool_call>", "</seed:tool_call>"),
        ),
    )
)

MiMoToolParser = tool_parser("mimo", family="qwen3_coder")(
    _family_parser("MiMoToolParser", qwen_coder_family("mimo", arg_converter=verbatim_params))
)

Step5ToolParser = tool_parser("step5", family="qwen3_coder")(
    _family_parser(
        "Step5ToolParser",
        qwen_coder_family(
            "step5", strip_content_with_tools=False, drop_ws_content_before_tools=False
        ),
    )
)

def _glm_chooser(ctx: ParseContext) -> Family:
    return _GLM_THINKING if thinking_enabled(ctx) else _GLM_PLAIN


GlmToolParser = tool_parser(
    "glm45", "glm47", "glm45_moe", "glm47_moe", "glm", "glm4", family="glm45",
)(_family_parser("GlmToolParser", chooser=_glm_chooser))

# Ling3 reuses the GLM-4.7 grammar and its thinking switch unchanged.
Ling3ToolParser = tool_parser("ling3", family="glm45")(
    _family_parser("Ling3ToolParser", chooser=_glm_chooser)
)


# ── MiniMax-M2/M3, PLaMo-3, Inkling ─────────────────────────────────────────────────────────

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
        (CONTENT, "TOOL_START"): _t(PREAMBLE),
        (ARGS, "INVOKE_END"): _t(BETWEEN, CALL_END),
        **{(st, inv): _t(NAME, CALL_START) for st in (PREAMBLE, BETWEEN) for inv in invokes},
        **{(NAME, end): _t(ARGS) for end in ("NAME_END_DQ", "NAME_END_SQ", "NAME_END_BARE")},
    }
    if m2:
        terminals.update({
            "THINK_START": (think[0],), "THINK_END": (think[1],),
            "PARAM_START": ("<parameter name=",), "PARAM_END": ("</parameter>",),
        })
        transitions.update({
            (REASONING, "THINK_START"): _t(REASONING),
            (REASONING, "THINK_END"): _t(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): _t(CONTENT),
            (REASONING, "TOOL_START"): _t(PREAMBLE, REASONING_END),
            (ARGS, "PARAM_START"): _t(ARGS, ARG),
            (ARGS, "PARAM_END"): _t(ARGS, ARG),
            (PREAMBLE, "TOOL_END"): _t(CONTENT),
            (BETWEEN, "TOOL_END"): _t(CONTENT),
            (CONTENT, "TOOL_END"): _t(CONTENT),
            **{(CONTENT, inv): _t(NAME, CALL_START) for inv in invokes},
        })
    else:
        transitions.update({
            (PREAMBLE, "TOOL_END"): _t(BETWEEN),
            (BETWEEN, "TOOL_END"): _t(BETWEEN),
        })
    return Family(name=name, terminals=terminals, transitions=transitions, tool_args_json=False, **flags)


MINIMAX_M3_NS = "]<]minimax[>["
_M3_ELEMENT_OPEN = MINIMAX_M3_NS + "<"
_M3_ELEMENT_CLOSE = MINIMAX_M3_NS + "</"
_M3_MAX_DEPTH = 128



def _m3_element(text: str, pos: int, depth: int) -> tuple[str, Any, int] | None:
    """The element opening at ``pos`` as (name, value, end), or None when malformed/open.
    A value is the element's text, or its (name, value) children in order."""
    if depth > _M3_MAX_DEPTH:
        return None
    start = pos + len(_M3_ELEMENT_OPEN)
    gt = text.find(">", start)
    if gt <= start:
        return None
    tag = text[start:gt]
    if tag.startswith("/") or not tag.strip():
        return None
    closer = f"{_M3_ELEMENT_CLOSE}{tag}>"
    pos = gt + 1
    texts: list[str] = []
    children: list[tuple[str, Any]] = []
    while True:
        mark = text.find(MINIMAX_M3_NS, pos)
        if mark < 0:
            return None
        texts.append(text[pos:mark])
        if text.startswith(closer, mark):
            pos = mark + len(closer)
            break
        if not text.startswith(_M3_ELEMENT_OPEN, mark):
            return None
        child = _m3_element(text, mark, depth + 1)
        if child is None:
            return None
        children.append(child[:2])
        pos = child[2]
    body = "".join(texts)
    if not children:
        return tag, body, pos
    if body.strip():
        key = "$text"
        while any(k == key for k, _ in children):
            key = "$" + key
        children.append((key, body))
    return tag, children, pos


def _m3_params(raw: str) -> list[tuple[str, Any]]:
    """Top-level parameter elements, up to the first malformed or unterminated one."""
    params: list[tuple[str, Any]] = []
    pos = 0
    while True:
        while pos < len(raw) and raw[pos].isspace():
            pos += 1
        if not raw.startswith(_M3_ELEMENT_OPEN, pos):
            return params
        element = _m3_element(raw, pos, 1)
        if element is None:
            return params
        params.append(element[:2])
        pos = element[2]


def _container(schema: dict) -> tuple[str, dict] | None:
    """The first array/object alternative of ``schema`` as (kind, schema)."""
    types = schema.get("type")
    for kind in ("array", "object"):
        if types == kind or (isinstance(types, list) and kind in types):
            return kind, schema
    if types is None:
        if "items" in schema:
            return "array", schema
        if "properties" in schema or "additionalProperties" in schema:
            return "object", schema
    for key in ("anyOf", "oneOf"):
        for choice in schema.get(key) or ():
            if isinstance(choice, dict):
                found = _container(choice)
                if found:
                    return found
    return None


def _m3_value(value: Any, schema: Any) -> Any:
    schema = schema if isinstance(schema, dict) else None
    container = _container(schema) if schema is not None else None
    if isinstance(value, str):
        if schema is None:
            return value
        types = schema_types(schema)
        if container is not None and "string" not in types and not value.strip():
            return [] if container[0] == "array" else {}
        return coerce_string(value, types)
    if container is not None and container[0] == "array":
        items = container[1].get("items")
        return [_m3_value(child, items) for _, child in value]
    return _m3_object(value, container[1] if container is not None else None)


def _m3_object(elements: list[tuple[str, Any]], schema: dict | None) -> dict:
    """Named elements as an object; a repeated name collects its values into a list."""
    props = (schema or {}).get("properties") or {}
    extra = (schema or {}).get("additionalProperties")
    out: dict[str, Any] = {}
    lists: set[str] = set()
    for key, element in elements:
        value = _m3_value(element, props.get(key, extra))
        if key not in out:
            out[key] = value
        elif key in lists:
            out[key].append(value)
        else:
            out[key] = [out[key], value]
            lists.add(key)
    return out


def minimax_m3_args(raw: str, properties: dict) -> str:
    """``<k>v</k>`` elements (all namespaced) typed by the tool schema; nested elements become
    objects, or arrays where the schema says so (list items render as ``<item>``)."""
    return json.dumps(_m3_object(_m3_params(raw), {"properties": properties or {}}), ensure_ascii=False)


_PLAMO_MARK = "<|plamo:"
_PLAMO_THINK = ("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>")


def plamo3_family(thinking: bool) -> Family:
    """``<|plamo:begin_tool_requests:plamo|>`` blocks of requests, each a name and a JSON
    arguments section; ``<|plamo:tag|>`` (end of turn) closes anything. The reasoning
    markers exist only while thinking is on (``enable_thinking``, default on)."""
    terms = {
        "REQUESTS_START": ("<|plamo:begin_tool_requests:plamo|>",),
        "REQUESTS_END": ("<|plamo:end_tool_requests:plamo|>",),
        "REQUEST_START": ("<|plamo:begin_tool_request:plamo|>",),
        "REQUEST_END": ("<|plamo:end_tool_request:plamo|>",),
        "NAME_START": ("<|plamo:begin_tool_name:plamo|>",),
        "NAME_END": ("<|plamo:end_tool_name:plamo|>",),
        "ARGS_START": ("<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",),
        "ARGS_END": ("<|plamo:end_tool_arguments:plamo|>",),
        "EOT": ("<|plamo:tag|>",),
    }
    trans: Transitions = {
        (CONTENT, "REQUESTS_START"): _t(PREAMBLE),
        (PREAMBLE, "REQUEST_START"): _t(PREAMBLE),
        (PREAMBLE, "NAME_START"): _t(NAME, CALL_START),
        (NAME, "NAME_END"): _t(PREAMBLE),
        (PREAMBLE, "ARGS_START"): _t(ARGS),
        (ARGS, "ARGS_END"): _t(BETWEEN),
        (BETWEEN, "REQUEST_END"): _t(PREAMBLE, CALL_END),
        (PREAMBLE, "REQUESTS_END"): _t(CONTENT),
        (REASONING, "EOT"): _t(CONTENT, REASONING_END),
        **{(st, "EOT"): _t(CONTENT) for st in (CONTENT, PREAMBLE, NAME, ARGS, BETWEEN)},
    }
    if thinking:
        terms.update({"THINK_START": (_PLAMO_THINK[0],), "THINK_END": (_PLAMO_THINK[1],)})
        trans.update({
            (REASONING, "THINK_START"): _t(REASONING),
            (CONTENT, "THINK_START"): _t(REASONING, REASONING_START),
            (REASONING, "THINK_END"): _t(CONTENT, REASONING_END),
            (CONTENT, "THINK_END"): _t(CONTENT),
            (REASONING, "REQUESTS_START"): _t(PREAMBLE, REASONING_END),
        })
    return Family(
        name="plamo3",
        terminals=terms,
        transitions=trans,
        tool_args_json=True,
        raw_json_args=True,
        strip_content_with_tools=False,
        preserve_tokens=frozenset({"<|plamo:begin_", "<|plamo:end_", ":plamo|>"}),
        unfinished_marker=_PLAMO_MARK,
    )


def inkling_args(raw: str, partial: bool) -> str:
    """The ``args`` member of the ``{"name": …, "args": {…}}`` body, verbatim (an unclosed
    object runs to the end); ``{}`` without one. A non-object ``args`` is a ValueError."""
    span = json_member_object(raw, "args")
    if span is not None:
        return span
    return "" if partial else "{}"


def inkling_family() -> Family:
    """Typed blocks ``<|message_model|>[header]<|content_KIND|>…<|end_message|>``; a tool block
    (``content_invoke_tool_json``) holds ``{"name": …, "args": {…}}``. Thinking blocks are
    not content, raw/error tool blocks are; text after tool blocks stays content."""
    ends = ("END_MESSAGE", "END_SAMPLING")
    openers_plain = ("TEXT_START", "TOOL_TEXT", "TOOL_ERROR")
    trans: Transitions = {
        (CONTENT, "MSG_MODEL"): _t(HEADER),
        (HEADER, "MSG_MODEL"): _t(HEADER),
        (CONTENT, "THINK_START"): _t(REASONING, REASONING_START),
        (HEADER, "THINK_START"): _t(REASONING, REASONING_START),
        (REASONING, "THINK_START"): _t(REASONING),
        **{(st, "TOOL_START"): _t(ARGS, REASONING_END, CALL_START) for st in (CONTENT, HEADER, REASONING)},
        **{(st, op): _t(CONTENT, REASONING_END) for st in (CONTENT, HEADER) for op in openers_plain},
        **{(CONTENT, end): _t(CONTENT) for end in ends},
        (REASONING, "END_MESSAGE"): _t(CONTENT),
        (REASONING, "END_SAMPLING"): _t(CONTENT, REASONING_END),
        **{(ARGS, end): _t(CONTENT, CALL_END) for end in ends},
        **{(HEADER, end): _t(CONTENT, TEXT) for end in ends},
    }
    return Family(
        name="inkling",
        terminals={
            "MSG_MODEL": ("<|message_model|>",),
            "TEXT_START": ("<|content_text|>",),
            "THINK_START": ("<|content_thinking|>",),
            "END_MESSAGE": ("<|end_message|>",),
            "END_SAMPLING": ("<|content_model_end_sampling|>",),
            "TOOL_START": ("<|content_invoke_tool_json|>",),
            "TOOL_TEXT": ("<|content_invoke_tool_text|>",),
            "TOOL_ERROR": ("<|content_tool_error|>",),
        },
        transitions=trans,
        arg_converter=inkling_args,
        tool_args_json=True,
        strip_content_with_tools=False,
        json_args_keys=("args", "arguments", "parameters"),
        keep_text_after_calls=True,
    )


MinimaxM2ToolParser = tool_parser("minimax_m2", "minimax-m2", "minimax", family="minimax_m2")(
    _family_parser(
        "MinimaxM2ToolParser",
        _invoke_family(
            "minimax_m2", "", ("<minimax:tool_call>", "</minimax:tool_call>"),
            ("<think>", "</think>"), arg_converter=minimax_m2_params, validate_tool_names=True,
        ),
    )
)

MinimaxM3ToolParser = tool_parser("minimax_m3", "minimax-m3", family="minimax_m3")(
    _family_parser(
        "MinimaxM3ToolParser",
        _invoke_family(
            "minimax_m3", MINIMAX_M3_NS,
            (f"{MINIMAX_M3_NS}<tool_call>", f"{MINIMAX_M3_NS}</tool_call>"), None,
            schema_arg_converter=minimax_m3_args, strip_content_with_tools=False,
        ),
    )
)

_PLAMO3_THINKING, _PLAMO3_PLAIN = plamo3_family(True), plamo3_family(False)

Plamo3ToolParser = tool_parser("plamo3", family="plamo3")(
    _family_parser(
        "Plamo3ToolParser",
        chooser=lambda ctx: _PLAMO3_THINKING if ctx.kwarg("enable_thinking", True) else _PLAMO3_PLAIN,
    )
)

InklingToolParser = tool_parser("inkling", family="inkling")(
    _family_parser("InklingToolParser", inkling_family())
)
