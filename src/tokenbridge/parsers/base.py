"""The streaming-first parser interface shared by every reasoning and tool-call family.

One-shot parsing is ``feed(all)`` followed by ``finish()``: there is no second code path, so
a result cannot depend on how the output was chunked. A parser holds back only what it cannot
decide yet; ``snapshot()`` returns that hold-back plus a few flags as plain msgpack-able data,
never the output so far, so a stream's state stays small.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, ClassVar, Protocol

import msgspec


class ToolCallDelta(msgspec.Struct, omit_defaults=True):
    """A piece of one tool call: ``name`` (and ``id``) arrive once, ``arguments`` in fragments.

    ``id`` is set only by families whose ids are part of the format (Kimi's
    ``functions.name:idx``, Mistral's 9-character ids); derender assigns the rest.
    """

    index: int
    name: str | None = None
    arguments: str = ""
    id: str | None = None


class Delta(msgspec.Struct, omit_defaults=True):
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallDelta] = []

    def __bool__(self) -> bool:
        return bool(self.content or self.reasoning or self.tool_calls)


class Final(msgspec.Struct):
    """The end of a parse: its last delta, and what vLLM's one-shot message holds for content and
    reasoning that came out empty (``""``, or ``None`` for null; see ``parsers.quirks``)."""

    delta: Delta
    empty_content: str | None = None
    empty_reasoning: str | None = None


def merge_deltas(first: Delta, second: Delta) -> Delta:
    """One delta from a parser's feed and its finish (a stream's last chunk): one entry per
    tool-call index."""
    calls: dict[int, ToolCallDelta] = {}
    for tc in first.tool_calls + second.tool_calls:
        seen = calls.get(tc.index)
        if seen is None:
            calls[tc.index] = ToolCallDelta(tc.index, tc.name, tc.arguments, tc.id)
        else:
            seen.name = seen.name if seen.name is not None else tc.name
            seen.id = seen.id if seen.id is not None else tc.id
            seen.arguments += tc.arguments
    return Delta(first.content + second.content, first.reasoning + second.reasoning, list(calls.values()))


class Vocab(Protocol):
    """What a parser may ask of the tokenizer: ids of marker tokens, and their text."""

    def token_to_id(self, token: str) -> int | None: ...

    def id_to_token(self, token_id: int) -> str | None: ...


class ParseContext(msgspec.Struct):
    """Everything a parser may know about the request; built once per choice."""

    tools: list[dict] | None = None
    tool_choice: Any = "none"
    parallel_tool_calls: bool = True
    include_reasoning: bool = True
    chat_template_kwargs: dict = {}
    prompt_token_ids: list[int] | None = None  # None: the caller did not send them
    history_tool_call_cnt: int = 0
    vocab: Any = None  # a Vocab; Any keeps the struct free of tokenizer types
    # The configured reasoning parser's name (None: none). vLLM's engine-based tool parsers
    # keep reasoning markup in content as text only when no reasoning parser is configured.
    reasoning_parser: str | None = None
    # The checkpoint's ``response_template`` (tokenizer_config.json), the output format of
    # the ``hf``/``beam`` parsers; None when the tokenizer config has none.
    response_template: dict | None = None
    # The gpt-oss Harmony encoding (``model.harmony``), for parsers with ``uses_harmony``.
    harmony: Any = None

    def tool_names(self) -> set[str]:
        return {
            (t.get("function") or {}).get("name")
            for t in (self.tools or [])
            if isinstance(t, dict)
        }

    def kwarg(self, key: str, default: Any = None) -> Any:
        return (self.chat_template_kwargs or {}).get(key, default)


class ParserState(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """A parser's hold-back, as it travels in the stream state: a subclass per parser, encoded as
    a plain array. Each field is named after the parser attribute it saves; a field typed as
    another ``ParserState`` saves the object in that attribute (a filter, an inner stream), and
    one named ``base`` the parser's state as its base class (a subclass that adds fields). Rules
    that tie fields together are checked in ``check`` (a ``ValueError`` there is a bad state),
    once per restore rather than on every snapshot."""

    #: Stream-state version 2 saved this one-field state as the field's bare value; such a value
    #: is still read, for one release (``derender.state.READABLE_VERSIONS``).
    bare_in_v2: ClassVar[bool] = False

    def check(self) -> None:
        """Raise ``ValueError`` where the fields contradict each other. ``restore`` checks the
        state it reads; an object loading a nested state checks that one."""


class _Plan:
    """How ``Stateful`` saves and loads one state class (made once per class)."""

    __slots__ = ("get", "fields")

    def __init__(self, state: type[ParserState]) -> None:
        names = state.__struct_fields__
        nested = {f.name: f.type for f in msgspec.structs.fields(state)
                  if isinstance(f.type, type) and issubclass(f.type, ParserState)}
        #: ``(name, nested state class or None)`` per field; None when no field nests a state.
        self.fields = [(n, nested.get(n)) for n in names] if nested else None
        self.get = attrgetter(*names) if len(names) > 1 else (lambda obj, one=attrgetter(*names): (one(obj),))


_plans: dict[type[ParserState], _Plan] = {}


def _plan(state: type[ParserState]) -> _Plan:
    plan = _plans.get(state)
    if plan is None:
        plan = _plans[state] = _Plan(state)
    return plan


class Stateful:
    """``snapshot``/``restore`` from the class's ``State`` (a ``ParserState``; None: stateless).

    ``restore`` validates the types of every field, so a bad state is a ValueError here and never
    reaches the parser's code. Nothing overrides ``restore``; an object that makes the objects
    it holds when it loads (an open call) overrides ``snapshot`` and ``load``."""

    __slots__ = ()
    State: ClassVar[type[ParserState] | None] = None

    def snapshot(self) -> Any:
        return None if self.State is None else self.state_as(self.State)

    def state_as(self, state: type[ParserState]) -> ParserState:
        """The attributes ``state`` names, as a ``state``."""
        plan = _plans.get(state) or _plan(state)
        if plan.fields is None:
            return state(*plan.get(self))
        return state(*[
            getattr(self, name) if nested is None
            else self.state_as(nested) if name == "base"
            else getattr(self, name).snapshot()
            for name, nested in plan.fields
        ])

    def restore(self, snap: Any) -> None:
        """Validate ``snap`` as ``State`` and ``load`` it (a parser whose state class depends on
        its set-up sets ``State`` on the instance)."""
        state = self.State
        if state is None:
            if snap is not None:
                raise ValueError(f"unexpected {type(self).__name__} state")
            return
        if isinstance(snap, msgspec.Struct):
            snap = msgspec.to_builtins(snap)
        elif state.bare_in_v2 and not isinstance(snap, list):
            snap = [snap]
        try:
            loaded = msgspec.convert(snap, state)
        except msgspec.ValidationError as e:
            raise ValueError(f"bad {type(self).__name__} state: {e}") from None
        loaded.check()
        self.load(loaded)

    def load(self, state: ParserState) -> None:
        """Take every field of ``state`` as the attribute of the same name (a class with
        ``__slots__`` loads its own)."""
        plan = _plans.get(type(state)) or _plan(type(state))
        if plan.fields is None:
            self.__dict__.update(msgspec.structs.asdict(state))
            return
        for name, nested in plan.fields:
            value = getattr(state, name)
            if nested is None:
                setattr(self, name, value)
            elif name == "base":
                Stateful.load(self, value)
            else:
                getattr(self, name).load(value)


class ReasoningParser(Stateful):
    """Splits output text into reasoning and content.

    ``feed`` returns ``(reasoning, content)`` for the text it can decide now.
    """

    name: ClassVar[str] = ""
    #: vLLM's engine-backed reasoning adapters; with an engine tool parser they make the
    #: pair "engine based" (tool markup is parsed out of content even with no calls kept).
    engine_based: ClassVar[bool] = False

    #: What vLLM's one-shot answer holds for a field that came out empty: ``None`` (null)
    #: or ``""`` (e.g. R1's reasoning, the identity parser's content). Read after ``finish``.
    empty_reasoning: str | None = None
    empty_content: str | None = None
    #: An empty answer is ``""`` content whatever the tool parser leaves (quirk
    #: thinking_off_content_kept_empty).
    keeps_empty_content: bool = False

    #: The parser reads the Harmony encoding (``ParseContext.harmony``).
    uses_harmony: ClassVar[bool] = False

    #: A rewrite vLLM applies to the final content after everything else (MiniCPM-V's escaped
    #: newlines): ``feed(text) -> str``, ``finish() -> str``, ``snapshot()``, ``restore(snap)``.
    content_filter: Any = None

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx

    def set_tool_follows(self, follows: bool) -> None:
        """Told once, before parsing, whether a tool parser reads the content (formats whose
        reasoning parser also routes content when none does: hf, beam, Cohere)."""

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """Render's ``reasoning_ended``: is reasoning already closed by the prompt?"""
        return False

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        raise NotImplementedError

    def finish(self) -> tuple[str, str]:
        return "", ""


class ToolParser(Stateful):
    """Extracts tool calls from post-reasoning text; what is not a call is content.

    ``supports_required_and_named``: False for families whose calls cannot be forced into
    vLLM's JSON form, so ``required``/named choices fall back to this parser.
    ``engine_based``: vLLM's engine-backed parsers also run under ``tool_choice="none"``
    (markup is stripped from content, calls dropped).
    ``blank_content_is_null``: content that is only whitespace becomes null once calls were
    made (vLLM's generic path; Harmony keeps it).
    ``empty_content``: see below.
    """

    name: ClassVar[str] = ""
    supports_required_and_named: ClassVar[bool] = True
    engine_based: ClassVar[bool] = False
    blank_content_is_null: ClassVar[bool] = True
    #: Set (on the instance, by ``finish``) when vLLM's one-shot answer has null content
    #: although no call came out, e.g. a tool block that vLLM counts as "tools called".
    null_content: bool = False
    #: The content an engine parser reports for text it parsed to nothing under
    #: ``tool_choice="none"`` (null for most, ``""`` for Mistral's).
    empty_content: ClassVar[str | None] = None
    #: Under ``tool_choice="none"``, a call found (and dropped) still turns blank content null.
    nulls_blank_content_under_none: ClassVar[bool] = False
    #: The family's parser for ``--tool-call-streaming incremental`` streams (None: calls are
    #: streamed whole, once decided).
    incremental: ClassVar[type[ToolParser] | None] = None
    #: True for the incremental parsers: arguments arrive as they are written.
    streams_arguments: ClassVar[bool] = False
    #: The parser reads the Harmony encoding (``ParseContext.harmony``).
    uses_harmony: ClassVar[bool] = False

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        raise NotImplementedError

    def finish(self) -> Delta:
        return Delta()
