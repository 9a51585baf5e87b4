"""Mistral ``[TOOL_CALLS]`` tool calls and ``[THINK]`` reasoning, as vLLM 0.33 reads them. Two formats, chosen by the
tokenizer like vLLM does (v11+ tokenizers have an ``[ARGS]`` token); the text is held until
``finish()`` in both, since every rule depends on the whole text.

Pre-v11 (Mistral-7B-v0.3 SentencePiece, Nemo tekken):
``content[TOOL_CALLS] [{"name", "arguments"}, …]``. vLLM's rules:

* the text is split on ``[TOOL_CALLS]``; the first non-blank segment after a marker, stripped,
  is the call text (repeated markers with nothing between count as one, later segments are
  ignored). With ``tool_choice="required"`` or a named function and no marker, the whole
  stripped text is the call text (guided bare array);
* its first JSON value is decoded (trailing text ignored), else the greedy ``[{…}]`` inside it;
  an object is one call, a list holds calls; entries without ``name``/``arguments`` are skipped,
  a missing or non-string name is ``""``, string arguments stay verbatim, others are
  re-serialized with ``json.dumps(ensure_ascii=False)``, missing arguments are ``{}``;
* with calls, content is the text before the first marker (null when blank); without, content
  is the call text alone — what preceded the marker is dropped;
* ids are 9 random alphanumerics (Mistral's format).

v11+ (``[TOOL_CALLS]name[ARGS]{…}``, or ``name{…}``), read by vLLM's declarative engine:

* the tokenizer's other special tokens vanish (``[CALL_ID]`` included, so a call id joins
  the name); ``[TOOL_CALLS]`` starts a call, whose name runs to ``[ARGS]`` or the first ``{``
  (which starts the arguments); the arguments run to the next ``[TOOL_CALLS]``, and a marker
  with no transition there is plain text;
* the name is stripped and may be empty or unknown; a call with neither name nor arguments
  text is dropped; arguments are the first JSON value of the stripped text, verbatim (the rest
  dropped), else that text, ``{}`` when blank, then re-typed by the tool's schema;
* content is the text before the first call, stripped when there are calls;
  ``tool_choice="none"`` keeps it unstripped and drops the calls.

vLLM treats ``required``/named tool_choice as "auto" for this parser, and runs it (an engine
adapter) under ``tool_choice="none"`` too.

Reasoning picks its markers from the tokenizer: ``[THINK]``/``[/THINK]`` tokens (v13+), text
``<think>``/``</think>`` (v11+), or no reasoning at all (older tokenizers).
"""

from __future__ import annotations

import json
import random
import re
import string
from dataclasses import replace
from typing import Any, ClassVar

from tokenbridge.parsers.base import Delta, ParseContext, ParserState
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.json_calls import CallObject, CallObjectState, OpenCall
from tokenbridge.parsers.engine.lexer import lex, scan_markers, special_token_texts, token_id
from tokenbridge.parsers.engine.reasoning import (
    IdentityReasoningParser, MarkerEngineParser, MarkerFormat, engine_reasoning_ended,
)
from tokenbridge.parsers.engine.schema import fix_arg_types
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, HeldState, JsonFamily, as_content
from tokenbridge.parsers.declare import RenderRules

BOT = "[TOOL_CALLS]"
ARGS = "[ARGS]"
_ID_ALPHABET = string.ascii_letters + string.digits
_ARRAY = re.compile(r"\[{.*}\]", re.S)
_DECODER = json.JSONDecoder()


def mistral_call_id() -> str:
    return "".join(random.choices(_ID_ALPHABET, k=9))


def _forced(tool_choice: Any) -> bool:
    return tool_choice == "required" or isinstance(tool_choice, dict)


def calls_from_value(parsed: Any) -> list[tuple[str, str]]:
    if isinstance(parsed, dict):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return []
    calls = []
    for entry in parsed:
        if not isinstance(entry, dict) or ("name" not in entry and "arguments" not in entry):
            continue
        name = entry.get("name")
        args = entry.get("arguments")
        if args is None:
            args = "{}"
        elif not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        calls.append((name if isinstance(name, str) else "", args))
    return calls


def has_args_token(ctx: ParseContext) -> bool:
    vocab = ctx.vocab
    return vocab is not None and vocab.token_to_id(ARGS) is not None


def first_json_value(raw: str) -> str:
    """v11 arguments: the first JSON value of the stripped text, verbatim; else that text."""
    stripped = raw.strip()
    if not stripped:
        return "{}"
    try:
        _, end = _DECODER.raw_decode(stripped)
    except json.JSONDecodeError:
        return stripped
    return stripped[:end]


def extract_mistral_v11(text: str, ctx: ParseContext) -> Extraction:
    content: list[str] = []
    slots: list[list[str]] = []  # [name, arguments text]
    state = "content"  # content | name | args
    for is_marker, piece in lex(text, (BOT, ARGS), special_token_texts(ctx.vocab, (BOT, ARGS))):
        if is_marker and piece == BOT and state != "name":
            slots.append(["", ""])
            state = "name"
        elif is_marker and piece == ARGS and state == "name":
            state = "args"
        elif state == "content":
            content.append(piece)
        elif state == "name" and not is_marker and "{" in piece:
            brace = piece.index("{")
            slots[-1][0] += piece[:brace]
            slots[-1][1] += piece[brace:]
            state = "args"
        else:
            slots[-1][0 if state == "name" else 1] += piece
    before = "".join(content)
    if ctx.tool_choice == "none" and ctx.tools:
        return as_content(before)
    calls = [
        (name.strip(), fix_arg_types(first_json_value(args), name.strip(), ctx.tools))
        for name, args in slots
        if name or args
    ]
    if calls:
        return Extraction(before.strip() or None, calls)
    return as_content(before)


def extract_mistral(text: str, ctx: ParseContext) -> Extraction:
    if has_args_token(ctx):
        return extract_mistral_v11(text, ctx)
    if ctx.tool_choice == "none" and ctx.tools:
        return as_content(text)
    content: str | None = None
    if BOT in text:
        content, *segments = text.split(BOT)
        call_text = next((s.strip() for s in segments if s.strip()), "")
    elif _forced(ctx.tool_choice):
        call_text = text.strip()
    else:
        return as_content(text)
    try:
        parsed, _ = _DECODER.raw_decode(call_text)
    except json.JSONDecodeError:
        found = _ARRAY.findall(call_text)
        try:
            parsed = json.loads(found[0]) if found else None
        except json.JSONDecodeError:
            parsed = None
    calls = calls_from_value(parsed)
    if not calls:
        return as_content(call_text)
    return Extraction(content if content and content.strip() else None, calls)


@tool_parser("mistral", family="mistral", render=RenderRules("always", forced_schema="mistral"))
class MistralToolParser(HeldCallsParser):
    """vLLM's ``mistral`` tool-call format (pre-v11 ``[TOOL_CALLS]`` + JSON array).

    vLLM's ``MistralParser`` is a ``ParserEngine``: every request it adjusts keeps special
    tokens, tools or not (a Messages request without tools has tool_choice None, so it is
    adjusted)."""

    family = JsonFamily("mistral", extract_mistral)
    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True
    empty_content: ClassVar[str | None] = ""
    nulls_blank_content_under_none: ClassVar[bool] = True

    def call_id(self, index: int) -> str | None:
        return mistral_call_id()



# -- incremental (pre-v11) ------------------------------------------------------------------------

CONTENT, CALL_TEXT, LIST, OBJECT, DONE, BROKEN, FORCED = range(7)
_JSON_WS = " \t\n\r"


class MistralStreamState(ParserState):
    mode: int = CONTENT
    pending: str = ""  # a possible partial ``[TOOL_CALLS]``
    index: int = 0  # the next call's index
    raw: str = ""  # the open call's text while its name is not sent yet; leading blanks when forced
    call: CallObjectState | None = None  # the open call's parse position

    def check(self) -> None:
        if self.call is not None and self.mode not in (LIST, OBJECT):
            raise ValueError("bad mistral parser state: a call is open only in a list or an object")


class MistralStreamedCalls(OpenCall, MistralToolParser):
    """``mistral`` for ``--tool-call-streaming incremental`` (pre-v11 tokenizers; v11+ ones are
    decided whole, as in ``whole`` mode): content before ``[TOOL_CALLS]`` streams; after it, each
    ``{"name", "arguments"}`` object (alone or in a list) opens a call, with its 9-character id,
    when its name closes, and its arguments stream re-serialized (a string kept as its text).
    The text after the first JSON value is dropped, as the one-shot answer drops it.

    Malformed or truncated output, the documented answer of ``json_calls``: the calls sent stand
    and, from the byte that breaks the format (for a call not opened yet, from its start), the
    text is content; the content before the marker has been sent (the one-shot answer of an
    output without calls drops it). With a forced tool choice the text may start with the calls.
    """

    streams_arguments = True
    State = MistralStreamState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.v11 = has_args_token(ctx)
        self.load(MistralStreamState(mode=FORCED if _forced(ctx.tool_choice) else CONTENT))
        if self.v11:  # decided whole: the hold-then-decide shell's state
            self.State = HeldState

    @staticmethod
    def _new_call() -> CallObject:
        return CallObject(False, ("arguments",), stop_at_close=True, missing_args="{}", args_opts={"raw_string": True})

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if self.v11:
            return super().feed(text, token_ids)
        out = Delta(tool_calls=[])
        self.pending = scan_markers(self.pending + text, (BOT,), lambda t: self._text(t, out),
                                    lambda m: self._marker(m, out))
        return out

    def finish(self) -> Delta:
        if self.v11:
            return super().finish()
        out = Delta(tool_calls=[])
        text, self.pending = self.pending, ""
        self._text(text, out)
        if self.mode == FORCED or (self.mode in (LIST, OBJECT) and self._call is not None and not self._call.named):
            out.content += self.raw
        self.mode, self._call = DONE, None
        return out

    def _marker(self, marker: str, out: Delta) -> None:
        if self.mode in (CONTENT, CALL_TEXT, FORCED):
            if self.mode == FORCED:
                out.content += self.raw
            self.mode, self.raw = CALL_TEXT, ""
        elif self.mode in (LIST, OBJECT):  # the one-shot answer cuts the call text here
            self._break(marker, out)
        elif self.mode == BROKEN:
            out.content += marker

    def _text(self, text: str, out: Delta) -> None:
        i, n = 0, len(text)
        while i < n:
            mode = self.mode
            if mode == CONTENT or mode == BROKEN:
                out.content += text[i:]
                return
            if mode == DONE:
                return
            if self._call is not None:
                i += self._element(text[i:], out)
                continue
            c = text[i]
            if mode == FORCED and c in _JSON_WS:
                self.raw += c
                i += 1
            elif c in _JSON_WS or (c == "," and mode == LIST and self.index):
                i += 1
            elif mode == FORCED and c not in "[{":  # not the calls: content, up to a marker
                out.content += self.raw
                self.mode, self.raw = CONTENT, ""
            elif mode in (CALL_TEXT, FORCED) and c in "[{":
                self.raw = ""
                self.mode = LIST if c == "[" else OBJECT
                i += c == "["
            elif c == "{":
                self._call, self.raw = self._new_call(), ""
            elif mode == LIST and c == "]":
                self.mode = DONE
            else:
                self._break(text[i:], out)
                return

    def _call_id(self) -> str:
        return mistral_call_id()

    def _element(self, text: str, out: Delta) -> int:
        used, _ = self._step_call(text, out.tool_calls)
        call = self._call
        if call.broken is not None:
            self._break(call.broken if call.named else self.raw, out)
            return len(text)
        if call.complete:
            self._call = None
            self.index += 1
            if self.mode == OBJECT:
                self.mode = DONE
        return used

    def _break(self, tail: str, out: Delta) -> None:
        self.mode, self._call, self.raw = BROKEN, None, ""
        out.content += tail


MistralToolParser.incremental = MistralStreamedCalls


MISTRAL = MarkerFormat(
    start=("[THINK]",),
    end=("[/THINK]",),
    implicit_end=("[TOOL_CALLS]",),
    literals=("[ARGS]", "{"),
    starts_in_reasoning=False,
    wait_for_reasoning=True,
    reopen=True,
)
#: Mistral v11 (tekken with ``[ARGS]`` but no ``[THINK]``): the same grammar over text markers.
MISTRAL_TEXT = replace(MISTRAL, start=("<think>",), end=("</think>",))


def mistral_format(vocab: Any) -> MarkerFormat | None:
    """vLLM's choice by tokenizer; ``None`` (no reasoning) for pre-v11 tokenizers.

    vLLM asks mistral_common whether the tokenizer supports grammars (tekken v11+); the
    ``[ARGS]`` token, new in v11, stands for that here.
    """
    if token_id(vocab, "[THINK]") is not None:
        return MISTRAL
    if token_id(vocab, "[ARGS]") is not None:
        return MISTRAL_TEXT
    return None


@reasoning_parser("mistral", family="mistral")
class MistralReasoningParser(MarkerEngineParser):
    """Mistral ``[THINK]…[/THINK]`` reasoning (vLLM's Mistral engine); old tokenizers: none."""

    fmt = MISTRAL
    name = "mistral"

    def __new__(cls, ctx: ParseContext) -> Any:
        if mistral_format(ctx.vocab) is None:
            return IdentityReasoningParser(ctx)
        return super().__new__(cls)

    def __init__(self, ctx: ParseContext) -> None:
        self.fmt = mistral_format(ctx.vocab) or MISTRAL
        super().__init__(ctx)

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        fmt = mistral_format(ctx.vocab)
        if fmt is None:
            return IdentityReasoningParser.reasoning_ended_in_prompt(prompt_token_ids, ctx)
        return engine_reasoning_ended(fmt, prompt_token_ids, ctx)
