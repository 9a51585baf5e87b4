"""Marker-delimited reasoning (``<think>…</think>`` and its relatives): data driving two engines.

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
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from tokenbridge.parsers.base import ParseContext, ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.text import partial_suffix, special_token_texts

# --- thinking switches (chat_template_kwargs -> is thinking on) ---------------------------


def always_on(kwargs: dict) -> bool:
    return True


def enable_thinking_default_on(kwargs: dict) -> bool:
    """Qwen3: ``enable_thinking`` (truthy), default on."""
    return bool(kwargs.get("enable_thinking", True))


def either_flag_default_on(kwargs: dict) -> bool:
    """GLM/Kimi: on unless ``thinking`` or ``enable_thinking`` is given and both are falsy."""
    thinking, enable = kwargs.get("thinking"), kwargs.get("enable_thinking")
    if thinking is None and enable is None:
        return True
    return bool(thinking) or bool(enable)


def either_flag_default_off(kwargs: dict) -> bool:
    """DeepSeek-V3.x: off unless ``thinking`` or ``enable_thinking`` is truthy."""
    return bool(kwargs.get("thinking")) or bool(kwargs.get("enable_thinking"))


@dataclass(frozen=True)
class MarkerFormat:
    """One family's reasoning markers and the rules around them."""

    start: tuple[str, ...] = ("<think>",)
    end: tuple[str, ...] = ("</think>",)
    #: Markers that end reasoning and stay in the content (tool-call openers).
    implicit_end: tuple[str, ...] = ()
    #: The format's other markers: they only shape the lexing, and stay text.
    literals: tuple[str, ...] = ()
    thinking: Callable[[dict], bool] = always_on
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
    #: Tool-call openers that are text in content (implicit ends are openers too). With tool
    #: parsing skipped, vLLM tracks the opened span: a tool closer inside it stays text.
    tool_open: tuple[str, ...] = ()
    #: Tool-call closers: text (closing the span) inside a span, else their normal action.
    tool_close: tuple[str, ...] = ()
    #: Markers dropped in content outside a tool span (stray closers the grammar swallows).
    content_drops: tuple[str, ...] = ()


def _token_id(vocab: Any, text: str) -> int | None:
    if vocab is None:
        return None
    try:
        return vocab.token_to_id(text)
    except Exception:
        return None


_TEXT, _DROP, _CLOSE, _CLOSE_KEEP, _OPEN = range(5)


class _Lexer:
    """The action tables and marker scanner of one format over one vocabulary.

    Built once per (format, vocabulary) and shared by every request: the tables depend only
    on those two, and rebuilding them (the vocabulary's special tokens, a sort) per request
    costs more than parsing a short output.
    """

    __slots__ = ("actions", "span_open", "span_close", "search", "prefixes", "max_len")

    def __init__(self, fmt: MarkerFormat, vocab: Any) -> None:
        markers = (
            set(fmt.start) | set(fmt.end) | set(fmt.implicit_end) | set(fmt.literals)
            | set(fmt.tool_open) | set(fmt.tool_close) | set(fmt.content_drops)
        )
        drops = frozenset(special_token_texts(vocab, markers)) if fmt.drop_special_tokens else frozenset()
        reasoning_actions: dict[str, int] = {m: _TEXT for m in markers}
        content_actions: dict[str, int] = dict(reasoning_actions)
        for m in drops:
            reasoning_actions[m] = content_actions[m] = _DROP
        for m in fmt.start:
            reasoning_actions[m] = _DROP
            content_actions[m] = _OPEN if fmt.reopen else _TEXT
        for m in fmt.implicit_end:
            reasoning_actions[m] = _CLOSE_KEEP
        for m in fmt.end:
            reasoning_actions[m] = _CLOSE
            content_actions[m] = _DROP if fmt.drop_end_in_content else _TEXT
        for m in fmt.content_drops:
            content_actions[m] = _DROP
        self.actions = (content_actions, reasoning_actions)
        self.span_open = frozenset(fmt.tool_open) | frozenset(fmt.implicit_end)
        self.span_close = frozenset(fmt.tool_close)
        # Longest first: ``re`` takes the first alternative that matches, so a search finds
        # the leftmost marker and, there, the longest one (leftmost-longest lexing).
        literals = sorted(reasoning_actions, key=lambda m: (-len(m), m))
        self.search = re.compile("|".join(map(re.escape, literals))).search if literals else None
        #: Every proper prefix of a marker: what a chunk may end with while a marker is cut.
        self.prefixes = frozenset(m[:k] for m in literals for k in range(1, len(m)))
        self.max_len = max(map(len, literals), default=0)

    def partial_at(self, buf: str, pos: int) -> int:
        """The first ``j >= pos`` where ``buf[j:]`` is a proper prefix of a marker, else -1."""
        prefixes = self.prefixes
        for j in range(max(pos, len(buf) - self.max_len + 1), len(buf)):
            if buf[j:] in prefixes:
                return j
        return -1


_PER_VOCAB: dict[tuple[str, MarkerFormat, int], tuple[Any, Any]] = {}


def _per_vocab(kind: str, fmt: MarkerFormat, vocab: Any, build: Callable[[MarkerFormat, Any], Any]) -> Any:
    """``build(fmt, vocab)``, memoized per format and tokenizer. The entry holds the tokenizer
    it was built from, so a recycled ``id`` never returns another tokenizer's tables."""
    key = (kind, fmt, id(vocab))
    hit = _PER_VOCAB.get(key)
    if hit is not None and hit[0] is vocab:
        return hit[1]
    if len(_PER_VOCAB) >= 256:
        _PER_VOCAB.clear()
    value = build(fmt, vocab)
    _PER_VOCAB[key] = (vocab, value)
    return value


def _lexer_for(fmt: MarkerFormat, vocab: Any) -> _Lexer:
    return _per_vocab("lexer", fmt, vocab, _Lexer)


_END, _START, _BOUNDARY = range(3)


def _prompt_markers(fmt: MarkerFormat, vocab: Any) -> dict[int, int]:
    """Token id -> what it means to the prompt check (end before start before boundary)."""
    end_ids: set[int] = set()
    for m in fmt.end + fmt.implicit_end:
        i = _token_id(vocab, m)
        if i is not None:
            end_ids.add(i)
        elif m in fmt.end:
            end_ids = set()
            break
    kinds = {i: _BOUNDARY for i in (_token_id(vocab, m) for m in fmt.turn_boundaries) if i is not None}
    kinds.update((i, _START) for i in (_token_id(vocab, m) for m in fmt.start) if i is not None)
    kinds.update((i, _END) for i in end_ids)
    return kinds


def engine_reasoning_ended(
    fmt: MarkerFormat, prompt_token_ids: list[int], ctx: ParseContext
) -> bool:
    """vLLM's engine ``is_reasoning_end``: the last reasoning marker of this turn decides."""
    on = fmt.thinking(ctx.chat_template_kwargs or {})
    waits = fmt.starts_in_reasoning if fmt.wait_for_reasoning is None else fmt.wait_for_reasoning
    wait = on and waits
    if not wait and fmt.off_is_identity:
        return True
    start_opens = (on and fmt.starts_in_reasoning) or fmt.reopen
    kinds = _per_vocab("prompt", fmt, ctx.vocab, _prompt_markers)
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


class MarkerEngineParser(_BufferedSplitParser):
    """vLLM's parser-engine reasoning pass over one ``MarkerFormat`` (see module docstring)."""

    engine_based = True

    fmt: ClassVar[MarkerFormat]

    _TEXT, _DROP, _CLOSE, _CLOSE_KEEP, _OPEN = _TEXT, _DROP, _CLOSE, _CLOSE_KEEP, _OPEN

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        fmt = self.fmt
        on = fmt.thinking(ctx.chat_template_kwargs or {})
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
        actions, span_open, span_close = lexer.actions, lexer.span_open, lexer.span_close
        search = lexer.search
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

    # -- interface --------------------------------------------------------------------------

    def snapshot(self) -> Any:
        return [self.in_reasoning, self.buf, self.held_ws, self.in_span]

    def restore(self, snap: Any) -> None:
        if not (
            isinstance(snap, list)
            and len(snap) == 4
            and isinstance(snap[0], bool)
            and isinstance(snap[1], str)
            and isinstance(snap[2], str)
            and isinstance(snap[3], bool)
        ):
            raise ValueError("bad reasoning parser state")
        self.in_reasoning, self.buf, self.held_ws, self.in_span = snap


class MarkerPartitionParser(_BufferedSplitParser):
    """vLLM's ``BaseThinkingReasoningParser.extract_reasoning`` over one start/end pair.

    vLLM drops everything before the first start marker anywhere in the output. To stream
    without holding the whole output, a start marker counts only when it begins within the
    first ``START_WINDOW`` characters; real outputs put it at the very beginning.
    """

    fmt: ClassVar[MarkerFormat]
    START_WINDOW: ClassVar[int] = 64
    empty_reasoning = ""

    _PRE, _REASONING, _CONTENT = range(3)

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.thinking = self.fmt.thinking(ctx.chat_template_kwargs or {})
        self.state = self._PRE if self.fmt.start else self._REASONING
        self.buf = ""
        if not self.thinking:
            self.empty_reasoning = None
            self.empty_content = ""

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        fmt = cls.fmt
        if not fmt.thinking(ctx.chat_template_kwargs or {}):
            return True
        end = _token_id(ctx.vocab, fmt.end[0])
        if not fmt.start:
            return end is not None and end in prompt_token_ids
        start = _token_id(ctx.vocab, fmt.start[0])
        for t in reversed(prompt_token_ids):
            if t == start:
                return False
            if t == end:
                return True
        return False

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

    def snapshot(self) -> Any:
        return [self.state, self.buf]

    def restore(self, snap: Any) -> None:
        if not (
            isinstance(snap, list)
            and len(snap) == 2
            and snap[0] in (self._PRE, self._REASONING, self._CONTENT)
            and isinstance(snap[1], str)
        ):
            raise ValueError("bad reasoning parser state")
        self.state, self.buf = snap


def _register(engine: type, fmt: MarkerFormat, name: str, *aliases: str, family: str) -> type:
    cls = type(
        f"{family.title().replace('_', '').replace('-', '')}{engine.__name__}",
        (engine,),
        {"fmt": fmt, "name": name, "__doc__": f"{name}: {engine.__doc__.splitlines()[0]}"},
    )
    return reasoning_parser(name, *aliases, family=family)(cls)


QWEN3 = MarkerFormat(
    implicit_end=("<tool_call>",),
    literals=("</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", ">"),
    thinking=enable_thinking_default_on,
    strip_trailing_whitespace=False,
    turn_boundaries=("<|im_start|>", "<|im_end|>"),
)
GLM45 = MarkerFormat(
    implicit_end=("<tool_call>",),
    literals=("</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    thinking=either_flag_default_on,
    reopen=True,
    turn_boundaries=("<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"),
)
KIMI_K2 = MarkerFormat(
    implicit_end=("<|tool_calls_section_begin|>",),
    literals=(
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_end|>",
        "<|tool_call_argument_begin|>",
    ),
    thinking=either_flag_default_on,
)
DEEPSEEK_R1 = MarkerFormat(drop_end_in_content=False, drop_special_tokens=False)
_QWEN3_TOOL_LITERALS = QWEN3.literals
SEED_OSS = MarkerFormat(
    start=("<seed:think>",),
    end=("</seed:think>",),
    implicit_end=("<seed:tool_call>",),
    literals=("</seed:tool_call>",) + _QWEN3_TOOL_LITERALS[1:],
    thinking=enable_thinking_default_on,
    strip_trailing_whitespace=False,
    turn_boundaries=("<seed:bos>", "<seed:eos>"),
)
#: Step-3.5/3.7: the template always opens ``<think>``; trailing whitespace is stripped.
STEP3P5 = replace(QWEN3, thinking=always_on, strip_trailing_whitespace=True)
NEMOTRON_V3 = replace(QWEN3, strip_trailing_whitespace=True)


def deepseek_v4_thinking(kwargs: dict) -> bool:
    """DeepSeek-V4: on unless a flag says off, and off for ``reasoning_effort: none``."""
    if "thinking" not in kwargs and "enable_thinking" not in kwargs:
        on = True
    else:
        on = bool(kwargs.get("thinking") or kwargs.get("enable_thinking"))
    return on and kwargs.get("reasoning_effort") != "none"


_DSML = "｜DSML｜"
DEEPSEEK_V4 = MarkerFormat(
    implicit_end=(f"<{_DSML}tool_calls>", f"<{_DSML}toolcalls>", f"<{_DSML}tool>"),
    literals=(
        f"</{_DSML}tool_calls>",
        f'<{_DSML}invoke name="',
        '">',
        f"</{_DSML}invoke>",
        f"<{_DSML}parameter",
        f"</{_DSML}parameter>",
    ),
    thinking=deepseek_v4_thinking,
    reopen=True,
    off_is_identity=False,
)
DEEPSEEK_V41 = replace(
    DEEPSEEK_V4,
    implicit_end=(f"<{_DSML} calls>",),
    literals=(
        f"</{_DSML} calls>",
        f'<{_DSML} invoke name="',
        '">',
        f"</{_DSML} invoke>",
        f"<{_DSML} parameter",
        f"</{_DSML} parameter>",
    ),
)
_MINIMAX_TOOL_CLOSE = "</minimax:tool_call>"
#: MiniMax-M2: always thinking; ``<minimax:tool_call>`` ends reasoning, a stray closer in
#: content is swallowed, ``<invoke name=…`` in content opens a (skipped) tool span.
MINIMAX_M2 = MarkerFormat(
    implicit_end=("<minimax:tool_call>",),
    tool_open=('<invoke name="', "<invoke name='", "<invoke name="),
    tool_close=(_MINIMAX_TOOL_CLOSE,),
    content_drops=(_MINIMAX_TOOL_CLOSE,),
    literals=("<parameter name=", "</parameter>", "</invoke>", '">', "'>", ">"),
)
#: Step3: no start marker; the text before the first ``</think>`` is reasoning.
STEP3 = MarkerFormat(start=(), drop_end_in_content=False, drop_special_tokens=False)

Qwen3ReasoningParser = _register(
    MarkerEngineParser, QWEN3, "qwen3", "qwen3_5", "qwen3-thinking", "qwen3_thinking",
    family="qwen3",
)
Glm45ReasoningParser = _register(
    MarkerEngineParser, GLM45, "glm45", "glm47", "glm", "glm_moe_dsa", family="glm45"
)
KimiK2ReasoningParser = _register(
    MarkerEngineParser, KIMI_K2, "kimi_k2", "kimi_k25", "kimi_thinking", family="kimi_k2"
)
DeepSeekR1ReasoningParser = _register(
    MarkerPartitionParser, DEEPSEEK_R1, "deepseek_r1", "step5", "deepseek-r1", family="deepseek_r1"
)
_register(MarkerEngineParser, QWEN3, "mimo", family="qwen3")
_register(MarkerEngineParser, GLM45, "ling3", family="glm45")
_register(MarkerEngineParser, SEED_OSS, "seed_oss", family="seed_oss")
_register(MarkerEngineParser, STEP3P5, "step3p5", family="qwen3")
_register(MarkerPartitionParser, STEP3, "step3", family="step3")
_register(MarkerEngineParser, MINIMAX_M2, "minimax_m2", "minimax", family="minimax_m2")
_register(MarkerEngineParser, DEEPSEEK_V4, "deepseek_v4", "deepseek-v4", family="deepseek_v4")
_register(MarkerEngineParser, DEEPSEEK_V41, "deepseek_v41", family="deepseek_v4")


class IdentityReasoningParser(ReasoningParser):
    """No reasoning: the whole output is content (present even when empty), as vLLM's identity."""

    empty_content = ""

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return True

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        return "", text


class _Delegating(ReasoningParser):
    """Picks R1-style parsing when thinking is on, the identity otherwise (DeepSeek-V3.x)."""

    thinking: ClassVar[Callable[[dict], bool]] = staticmethod(either_flag_default_off)

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.inner = self._pick(ctx)(ctx)
        self.empty_reasoning = self.inner.empty_reasoning
        self.empty_content = self.inner.empty_content

    @classmethod
    def _pick(cls, ctx: ParseContext) -> type[ReasoningParser]:
        on = cls.thinking(ctx.chat_template_kwargs or {})
        return DeepSeekR1ReasoningParser if on else IdentityReasoningParser

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return cls._pick(ctx).reasoning_ended_in_prompt(prompt_token_ids, ctx)

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        return self.inner.feed(text, token_ids)

    def finish(self) -> tuple[str, str]:
        return self.inner.finish()

    def snapshot(self) -> Any:
        return self.inner.snapshot()

    def restore(self, snap: Any) -> None:
        self.inner.restore(snap)


@reasoning_parser("deepseek_v3", "deepseek_v31", "deepseek-v3", "deepseek_v3_1", family="deepseek_v3")
class DeepSeekV3ReasoningParser(_Delegating):
    """DeepSeek-V3.1/V3.2: ``thinking``/``enable_thinking`` on -> R1 rules, else all content."""

    name = "deepseek_v3"


def _thinking_unless_set(kwargs: dict) -> bool:
    """Holo2: thinking defaults on when neither flag is given."""
    if kwargs.get("thinking") is None and kwargs.get("enable_thinking") is None:
        return True
    return either_flag_default_off(kwargs)


@reasoning_parser("holo2", family="deepseek_v3")
class Holo2ReasoningParser(_Delegating):
    """Holo2: the DeepSeek-V3 switch with thinking on by default."""

    name = "holo2"
    thinking = staticmethod(_thinking_unless_set)


@reasoning_parser("poolside_v1", family="deepseek_v3")
class PoolsideV1ReasoningParser(_Delegating):
    """Poolside V1: the DeepSeek-V3 switch; the prompt check stops at the ``<assistant>`` turn."""

    name = "poolside_v1"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        if cls._pick(ctx) is IdentityReasoningParser:
            return True
        vocab = ctx.vocab
        start, end = _token_id(vocab, "<think>"), _token_id(vocab, "</think>")
        turn = _token_id(vocab, "<assistant>")
        for t in reversed(prompt_token_ids):
            if t == start:
                return False
            if t == end:
                return True
            if t == turn:
                return False
        return False


HY_V3 = MarkerFormat(drop_end_in_content=False, drop_special_tokens=False)


@reasoning_parser("hy_v3", family="hy_v3")
class HYV3ReasoningParser(_Delegating):
    """Hunyuan V3: R1 rules unless ``reasoning_effort`` is missing or ``no_think``."""

    name = "hy_v3"

    @classmethod
    def _pick(cls, ctx: ParseContext) -> type[ReasoningParser]:
        effort = ctx.kwarg("reasoning_effort") or "no_think"
        return IdentityReasoningParser if effort == "no_think" else _HYV3Thinking


_HYV3Thinking = type("HYV3ThinkingParser", (MarkerPartitionParser,), {"fmt": HY_V3})


_HYV4_STRUCTURAL = re.compile(r"<(?:think|tool_calls|tool_call|arg_key|arg_value)(:[^\s>]+)?>")


def hy_v4_token_suffix(vocab: Any) -> str:
    """The checkpoint's suffix of Hunyuan V4 structural tokens (``<think:6124c78e>``), or ``""``."""
    get_vocab = getattr(vocab, "get_vocab", None)
    if get_vocab is None:
        return ""
    for token in get_vocab():
        m = _HYV4_STRUCTURAL.fullmatch(token)
        if m:
            return m.group(1) or ""
    return ""


def _hy_v4_thinking(kwargs: dict) -> bool:
    """Hunyuan V4: thinking unless ``reasoning_effort`` is ``no_think`` (default ``high``)."""
    return (kwargs.get("reasoning_effort") or "high") != "no_think"


HY_V4 = MarkerFormat(thinking=_hy_v4_thinking, drop_end_in_content=False, drop_special_tokens=False)


@reasoning_parser("hy_v4", family="hy_v4")
class HYV4ReasoningParser(MarkerPartitionParser):
    """Hunyuan V4: R1 rules over ``<think{suffix}>``/``</think{suffix}>``, the suffix read from
    the vocabulary; ``reasoning_effort: no_think`` makes everything content."""

    fmt = HY_V4
    name = "hy_v4"

    def __init__(self, ctx: ParseContext) -> None:
        self.fmt = self.format_for(ctx)
        super().__init__(ctx)

    @staticmethod
    def format_for(ctx: ParseContext) -> MarkerFormat:
        suffix = hy_v4_token_suffix(ctx.vocab)
        return replace(HY_V4, start=(f"<think{suffix}>",), end=(f"</think{suffix}>",))

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        fmt = cls.format_for(ctx)
        if not fmt.thinking(ctx.chat_template_kwargs or {}):
            return True
        start, end = _token_id(ctx.vocab, fmt.start[0]), _token_id(ctx.vocab, fmt.end[0])
        for t in reversed(prompt_token_ids):
            if t == start and start is not None:
                return False
            if t == end and end is not None:
                return True
        return False


@reasoning_parser("minimax_m2_append_think", "minimax-append-think", family="minimax_m2")
class MiniMaxM2AppendThinkReasoningParser(ReasoningParser):
    """MiniMax-M2 "append think": no split; the content gets back the ``<think>`` the prompt ate."""

    name = "minimax_m2_append_think"

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.started = False

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = _token_id(ctx.vocab, "<think>"), _token_id(ctx.vocab, "</think>")
        for t in reversed(prompt_token_ids):
            if t == end or t == start:
                return t == end
        return False

    def _prefix(self) -> str:
        if self.started:
            return ""
        self.started = True
        return "<think>"

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        return "", self._prefix() + text

    def finish(self) -> tuple[str, str]:
        return "", self._prefix()

    def snapshot(self) -> Any:
        return self.started

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, bool):
            raise ValueError("bad reasoning parser state")
        self.started = snap


class NemotronV3ReasoningParser(MarkerEngineParser):
    """Nemotron-3: Qwen3 rules; with ``enable_thinking: false`` or ``force_nonempty_content``
    a blank content swaps places with the reasoning, so both are held until the end."""

    fmt = NEMOTRON_V3
    name = "nemotron_v3"

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        kw = ctx.chat_template_kwargs or {}
        self.force = kw.get("enable_thinking") is False or kw.get("force_nonempty_content") is True
        self.held: list[str] | None = ["", ""] if self.force else None

    def _route(self, r: str, c: str, final: bool) -> tuple[str, str]:
        if self.held is None:
            return r, c
        self.held[0] += r
        self.held[1] += c
        if self.held[1].strip():
            r, c = self.held
            self.held = None
            return r, c
        if not final:
            return "", ""
        r, c = self.held
        self.held = None
        # The swapped-in reasoning is vLLM's content: verbatim ("" kept) when thinking is
        # off, ``None`` when empty otherwise.
        self.empty_reasoning = None if self.thinking else ""
        return c, r

    def snapshot(self) -> Any:
        return [super().snapshot(), self.held]

    def restore(self, snap: Any) -> None:
        if not (isinstance(snap, list) and len(snap) == 2):
            raise ValueError("bad reasoning parser state")
        held = snap[1]
        if held is not None and not (
            isinstance(held, list) and len(held) == 2 and all(isinstance(x, str) for x in held)
        ):
            raise ValueError("bad reasoning parser state")
        super().restore(snap[0])
        self.held = held


reasoning_parser("nemotron_v3", "nano_v3", "nemotron_3", "nemotron3", family="qwen3")(
    NemotronV3ReasoningParser
)
