"""Marker-delimited reasoning (``<think>…</think>`` and its relatives): one format row drives one of two engines.

vLLM 0.33 splits reasoning in two ways, and each family here names the one it uses:

* ``MarkerEngineParser`` follows vLLM's declarative parser engine (``vllm/parser/*.py``), run
  as a reasoning parser with tool parsing skipped. The text is lexed leftmost-longest over every
  marker of the format; in reasoning, a start marker is dropped, an end marker switches to
  content, and a tool-call opener ends reasoning implicitly and stays in content for the tool
  parser. In content a stray end marker is dropped, and some formats reopen reasoning on a
  start marker. Special tokens of the tokenizer that are not markers of the format vanish.
  Trailing whitespace of the whole reasoning is dropped unless the format keeps it.
* ``MarkerPartitionParser`` follows vLLM's ``BaseThinkingReasoningParser.extract_reasoning``:
  everything up to the first start marker is discarded, the text up to the first end marker is
  reasoning (always present, possibly ``""``), the rest is content verbatim.

A ``MarkerFormat`` row says which markers, which engine, and which chat-template kwargs switch
thinking off (then the whole output is content, as vLLM's thinking-off paths do).
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from tokenbridge.parsers.base import ParseContext, ParserState, ReasoningParser
from tokenbridge.parsers.engine.lexer import partial_suffix, special_token_texts, token_id
from tokenbridge.parsers.engine.thinking import ALWAYS_ON, ThinkingSwitch
from tokenbridge.parsers.registry import reasoning_parser


@dataclass(frozen=True)
class MarkerFormat:
    """One family's reasoning markers and the rules around them."""

    start: tuple[str, ...] = ("<think>",)
    end: tuple[str, ...] = ("</think>",)
    #: Markers that end reasoning and stay in the content (tool-call openers).
    implicit_end: tuple[str, ...] = ()
    #: The format's other markers: they only shape the lexing, and stay text.
    literals: tuple[str, ...] = ()
    thinking: ThinkingSwitch = ALWAYS_ON
    #: Whether the output starts inside reasoning when thinking is on.
    starts_in_reasoning: bool = True
    #: Whether the prompt check waits for an end marker (vLLM's ``wait_for_reasoning``);
    #: ``None`` follows ``starts_in_reasoning``.
    wait_for_reasoning: bool | None = None
    #: A start marker in content reopens reasoning (GLM) instead of being text.
    reopen: bool = False
    #: A stray end marker in content is dropped (engine families) instead of kept.
    drop_end_in_content: bool = True
    strip_trailing_whitespace: bool = True
    #: Special tokens that end a turn in the prompt: a closed ``</think>`` before the last one
    #: belongs to an earlier turn. Only formats with boundaries let the prompt close reasoning.
    turn_boundaries: tuple[str, ...] = ()
    #: Drop special tokens of the tokenizer that are not markers (vLLM's engine does).
    drop_special_tokens: bool = True
    #: Thinking off means no parsing at all; else the engine runs starting in content.
    off_is_identity: bool = True
    #: With thinking off, an empty output is ``""`` content whatever the tool parser leaves
    #: (vLLM's Qwen3Parser hands the output back untouched; others run the engine: null).
    off_keeps_empty_content: bool = False
    #: Tool-call openers that are text in content (implicit ends are openers too). With tool
    #: parsing skipped, vLLM tracks the opened span: a tool closer inside it stays text.
    tool_open: tuple[str, ...] = ()
    #: Tool-call closers: text (closing the span) inside a span, else their normal action.
    tool_close: tuple[str, ...] = ()
    #: Markers dropped in content outside a tool span (stray closers the grammar swallows).
    content_drops: tuple[str, ...] = ()


_TEXT, DROP, _CLOSE, _CLOSE_KEEP, _OPEN = range(5)


class MarkerLexer:
    """The action tables and marker scanner of one format over one vocabulary.

    Built once per (format, vocabulary) and shared by every request: the tables depend only
    on those two, and rebuilding them (the vocabulary's special tokens, a sort) per request
    costs more than parsing a short output.
    """

    __slots__ = ("actions", "span_open", "span_close", "match", "prefixes", "max_len", "firsts")

    def __init__(self, fmt: MarkerFormat, vocab: Any) -> None:
        markers = (
            set(fmt.start) | set(fmt.end) | set(fmt.implicit_end) | set(fmt.literals)
            | set(fmt.tool_open) | set(fmt.tool_close) | set(fmt.content_drops)
        )
        drops = frozenset(special_token_texts(vocab, markers)) if fmt.drop_special_tokens else frozenset()
        reasoning_actions: dict[str, int] = {m: _TEXT for m in markers}
        content_actions: dict[str, int] = dict(reasoning_actions)
        for m in drops:
            reasoning_actions[m] = content_actions[m] = DROP
        for m in fmt.start:
            reasoning_actions[m] = DROP
            content_actions[m] = _OPEN if fmt.reopen else _TEXT
        for m in fmt.implicit_end:
            reasoning_actions[m] = _CLOSE_KEEP
        for m in fmt.end:
            reasoning_actions[m] = _CLOSE
            content_actions[m] = DROP if fmt.drop_end_in_content else _TEXT
        for m in fmt.content_drops:
            content_actions[m] = DROP
        self.actions = (content_actions, reasoning_actions)
        self.span_open = frozenset(fmt.tool_open) | frozenset(fmt.implicit_end)
        self.span_close = frozenset(fmt.tool_close)
        # Longest first: ``re`` takes the first alternative that matches, so a match at the
        # leftmost candidate is the longest marker there (leftmost-longest lexing).
        literals = sorted(reasoning_actions, key=lambda m: (-len(m), m))
        self.match = re.compile("|".join(map(re.escape, literals))).match if literals else None
        #: Every proper prefix of a marker: what a chunk may end with while a marker is cut.
        self.prefixes = frozenset(m[:k] for m in literals for k in range(1, len(m)))
        self.max_len = max(map(len, literals), default=0)
        #: The characters that begin a marker (a handful: ``<``, ``[``…). Most text has none,
        #: and ``str.find`` skips it far faster than a regular expression's character class.
        self.firsts = tuple(sorted({m[0] for m in literals}))

    def first(self, buf: str, pos: int = 0) -> int:
        """Where the first character that begins a marker is, from ``pos`` on (-1: none)."""
        end = len(buf)
        found = -1
        for ch in self.firsts:
            i = buf.find(ch, pos, end)
            if i != -1:
                found = end = i
        return found

    def search(self, buf: str, pos: int) -> re.Match | None:
        """The leftmost-longest marker from ``pos`` on, as a match (None: none)."""
        match, first = self.match, self.first
        j = first(buf, pos)
        while j != -1:
            m = match(buf, j)
            if m is not None:
                return m
            j = first(buf, j + 1)
        return None

    def partial_at(self, buf: str, pos: int) -> int:
        """The first ``j >= pos`` where ``buf[j:]`` is a proper prefix of a marker, else -1."""
        prefixes = self.prefixes
        j = self.first(buf, max(pos, len(buf) - self.max_len + 1))
        while j != -1:  # only a marker's first character can begin one
            if buf[j:] in prefixes:
                return j
            j = self.first(buf, j + 1)
        return -1


_PER_VOCAB: dict[tuple[str, int, int], tuple[Any, MarkerFormat, Any]] = {}


def per_vocab(kind: str, fmt: MarkerFormat, vocab: Any, build: Callable[[MarkerFormat, Any], Any]) -> Any:
    """``build(fmt, vocab)``, memoized per format and tokenizer. The entry holds the tokenizer
    and format it was built from, so a recycled ``id`` never returns another one's tables."""
    key = (kind, id(fmt), id(vocab))  # by identity: a format's dataclass hash costs a microsecond
    hit = _PER_VOCAB.get(key)
    if hit is not None and hit[0] is vocab and hit[1] is fmt:
        return hit[2]
    if len(_PER_VOCAB) >= 256:
        _PER_VOCAB.clear()
    value = build(fmt, vocab)
    _PER_VOCAB[key] = (vocab, fmt, value)
    return value


def _lexer_for(fmt: MarkerFormat, vocab: Any) -> MarkerLexer:
    return per_vocab("lexer", fmt, vocab, MarkerLexer)


_END, _START, _BOUNDARY = range(3)


def _prompt_markers(fmt: MarkerFormat, vocab: Any) -> dict[int, int]:
    """Token id -> what it means to the prompt check (end before start before boundary)."""
    end_ids: set[int] = set()
    for m in fmt.end + fmt.implicit_end:
        i = token_id(vocab, m)
        if i is not None:
            end_ids.add(i)
        elif m in fmt.end:
            end_ids = set()
            break
    kinds = {i: _BOUNDARY for i in (token_id(vocab, m) for m in fmt.turn_boundaries) if i is not None}
    kinds.update((i, _START) for i in (token_id(vocab, m) for m in fmt.start) if i is not None)
    kinds.update((i, _END) for i in end_ids)
    return kinds


def closed_in_prompt(prompt_token_ids: list[int], vocab: Any, opens: tuple[str, ...], closes: tuple[str, ...]) -> bool:
    """Reasoning ended by the prompt: the prompt's last token among the ``opens`` and ``closes``
    markers is a close (vLLM's ``BaseThinkingReasoningParser.is_reasoning_end`` and its kin)."""
    open_ids = {token_id(vocab, m) for m in opens} - {None}
    close_ids = {token_id(vocab, m) for m in closes} - {None}
    for t in reversed(prompt_token_ids):
        if t in open_ids:
            return False
        if t in close_ids:
            return True
    return False


def engine_reasoning_ended(
    fmt: MarkerFormat, prompt_token_ids: list[int], ctx: ParseContext
) -> bool:
    """vLLM's engine ``is_reasoning_end``: the last reasoning marker of this turn decides."""
    on = fmt.thinking.of(ctx)
    waits = fmt.starts_in_reasoning if fmt.wait_for_reasoning is None else fmt.wait_for_reasoning
    wait = on and waits
    if not wait and fmt.off_is_identity:
        return True
    start_opens = (on and fmt.starts_in_reasoning) or fmt.reopen
    kinds = per_vocab("prompt", fmt, ctx.vocab, _prompt_markers)
    if kinds.keys().isdisjoint(prompt_token_ids):  # no marker at all (most prompts), seen in C
        return not wait
    get = kinds.get
    # From the end, only as far as the first marker: this turn's tail decides.
    for t in reversed(prompt_token_ids):
        kind = get(t)
        if kind is None:
            continue
        if kind == _END:
            return True
        if kind == _START and start_opens:
            return False
        break
    return not wait


class _BufferedSplitParser(ReasoningParser):
    """Output that ``_run`` splits from ``buf`` while thinking is on, all content otherwise.

    ``_route`` sees every split before it is handed on, so variants can hold or move text.
    """

    thinking: bool
    buf: str

    def _run(self, final: bool) -> tuple[str, str]:
        raise NotImplementedError

    def _route(self, r: str, c: str, final: bool) -> tuple[str, str]:
        return r, c

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        if not self.thinking:
            return self._route("", text, False)
        self.buf += text
        return self._route(*self._run(final=False), False)

    def finish(self) -> tuple[str, str]:
        if not self.thinking:
            return self._route("", "", True)
        return self._route(*self._run(final=True), True)


class EngineState(ParserState):
    in_reasoning: bool
    buf: str  # a possible partial marker
    held_ws: str  # trailing whitespace of the reasoning, dropped if it ends it
    in_span: bool


class MarkerEngineParser(_BufferedSplitParser):
    """vLLM's parser-engine reasoning pass over one ``MarkerFormat`` (see module docstring)."""

    State = EngineState
    engine_based = True

    fmt: ClassVar[MarkerFormat]

    _TEXT, DROP, _CLOSE, _CLOSE_KEEP, _OPEN = _TEXT, DROP, _CLOSE, _CLOSE_KEEP, _OPEN

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        fmt = self.fmt
        on = fmt.thinking.of(ctx)
        self.thinking = on or not fmt.off_is_identity
        self.in_reasoning = (
            on
            and fmt.starts_in_reasoning
            and not (
                fmt.turn_boundaries
                and self.reasoning_ended_in_prompt(ctx.prompt_token_ids or [], ctx)
            )
        )
        self.buf = ""
        self.held_ws = ""
        self.in_span = False
        self._lexer = _lexer_for(fmt, ctx.vocab)
        self.keeps_empty_content = not self.thinking and fmt.off_keeps_empty_content

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return engine_reasoning_ended(cls.fmt, prompt_token_ids, ctx)

    def _emit(self, text: str, r: list[str], c: list[str]) -> None:
        if not text:
            return
        if not self.in_reasoning:
            c.append(text)
        elif self.fmt.strip_trailing_whitespace:
            text = self.held_ws + text
            kept = text.rstrip()
            self.held_ws = text[len(kept) :]
            if kept:
                r.append(kept)
        else:
            r.append(text)

    def _run(self, final: bool) -> tuple[str, str]:
        """Lex ``self.buf`` leftmost-longest; unless ``final``, hold back from the first place
        where the rest of the buffer could still grow into a (longer) marker."""
        buf, r, c = self.buf, [], []
        lexer = self._lexer
        if lexer.first(buf) == -1:  # no marker starts here: all text
            self.buf = ""
            self._emit(buf, r, c)
            if final:
                self.held_ws = ""
            return "".join(r), "".join(c)
        actions, span_open, span_close = lexer.actions, lexer.span_open, lexer.span_close
        search = lexer.search if lexer.match is not None else None
        pos, n = 0, len(buf)
        hold = n if final else lexer.partial_at(buf, 0)
        if hold == -1:
            hold = n
        while pos < n:
            m = search(buf, pos) if search is not None else None
            j = m.start() if m is not None else n
            if hold < j or (hold == j and hold < n):
                if hold < pos:  # a prefix inside a consumed marker: look again from here
                    hold = lexer.partial_at(buf, pos)
                    if hold == -1:
                        hold = n
                    continue
                self._emit(buf[pos:hold], r, c)
                pos = hold
                break
            self._emit(buf[pos:j], r, c)
            if m is None:
                pos = n
                break
            best = m.group()
            action = actions[self.in_reasoning][best]
            pos = m.end()
            if best in span_close:
                if self.in_span:
                    action = _TEXT
                self.in_span = False
            elif best in span_open and (action != _TEXT or not self.in_reasoning):
                self.in_span = True
            if action == _TEXT:
                self._emit(best, r, c)
            elif action == _CLOSE:
                self.in_reasoning = False
            elif action == _CLOSE_KEEP:
                self.in_reasoning = False
                c.append(best)
            elif action == _OPEN:
                self.in_reasoning = True
        self.buf = buf[pos:]
        if final:
            self.held_ws = ""
        return "".join(r), "".join(c)


class PartitionState(ParserState):
    state: Literal[0, 1, 2]  # before the start marker, in reasoning, in content
    buf: str


class MarkerPartitionParser(_BufferedSplitParser):
    """vLLM's ``BaseThinkingReasoningParser.extract_reasoning`` over one start/end pair.

    vLLM drops everything before the first start marker anywhere in the output. To stream
    without holding the whole output, a start marker counts only when it begins within the
    first ``START_WINDOW`` characters; real outputs put it at the very beginning.
    """

    fmt: ClassVar[MarkerFormat]
    START_WINDOW: ClassVar[int] = 64
    empty_reasoning = ""

    State = PartitionState
    _PRE, _REASONING, _CONTENT = range(3)

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.thinking = self.fmt.thinking.of(ctx)
        self.state = self._PRE if self.fmt.start else self._REASONING
        self.buf = ""
        if not self.thinking:
            self.empty_reasoning = None
            self.empty_content = ""

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        fmt = cls.fmt
        if not fmt.thinking.of(ctx):
            return True
        if not fmt.start:
            end = token_id(ctx.vocab, fmt.end[0])
            return end is not None and end in prompt_token_ids
        return closed_in_prompt(prompt_token_ids, ctx.vocab, fmt.start[:1], fmt.end[:1])

    def _run(self, final: bool) -> tuple[str, str]:
        end = self.fmt.end[0]
        if self.state == self._PRE:
            start = self.fmt.start[0]
            i = self.buf.find(start, 0, self.START_WINDOW + len(start))
            if i != -1:
                self.buf = self.buf[i + len(start) :]
                self.state = self._REASONING
            elif final or len(self.buf) >= self.START_WINDOW + len(start):
                self.state = self._REASONING
            else:
                return "", ""
        if self.state == self._REASONING:
            j = self.buf.find(end)
            if j != -1:
                r, c = self.buf[:j], self.buf[j + len(end) :]
                self.buf, self.state = "", self._CONTENT
                return r, c
            keep = 0 if final else partial_suffix(self.buf, (end,))
            r = self.buf[: len(self.buf) - keep]
            self.buf = self.buf[len(self.buf) - keep :]
            return r, ""
        c, self.buf = self.buf, ""
        return "", c


def register_format(
    engine: type, fmt: MarkerFormat, name: str, *aliases: str, family: str, keeps_special: bool = False
) -> type:
    cls = type(
        f"{family.title().replace('_', '').replace('-', '')}{engine.__name__}",
        (engine,),
        {
            "fmt": fmt,
            "name": name,
            "__doc__": f"{name}: {engine.__doc__.splitlines()[0]}",
            "__module__": sys._getframe(1).f_globals["__name__"],  # the family's, as namedtuple does
        },
    )
    return reasoning_parser(name, *aliases, family=family, keeps_special=keeps_special)(cls)


class IdentityReasoningParser(ReasoningParser):
    """No reasoning: the whole output is content (present even when empty), as vLLM's identity."""

    empty_content = ""

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return True

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        return "", text


#: DeepSeek-R1's split (vLLM's ``DeepSeekR1ReasoningParser``), which Holo2, Hunyuan V3 and Poolside reuse.
R1 = MarkerFormat(drop_end_in_content=False, drop_special_tokens=False)
R1Parser = type("R1Parser", (MarkerPartitionParser,), {"fmt": R1, "__doc__": "DeepSeek-R1's rules."})


class SwitchedReasoningParser(ReasoningParser):
    """``thinking_parser`` when the request's ``thinking`` switch is on, the identity otherwise
    (vLLM's DeepSeek-V3 parser, which delegates the same way)."""

    thinking: ClassVar[ThinkingSwitch]
    thinking_parser: ClassVar[type[ReasoningParser]] = R1Parser

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.inner = self._pick(ctx)(ctx)
        self.empty_reasoning = self.inner.empty_reasoning
        self.empty_content = self.inner.empty_content
        self.snapshot, self.restore = self.inner.snapshot, self.inner.restore  # its state is the inner one's

    @classmethod
    def _pick(cls, ctx: ParseContext) -> type[ReasoningParser]:
        return cls.thinking_parser if cls.thinking.of(ctx) else IdentityReasoningParser

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return cls._pick(ctx).reasoning_ended_in_prompt(prompt_token_ids, ctx)

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        return self.inner.feed(text, token_ids)

    def finish(self) -> tuple[str, str]:
        return self.inner.finish()
