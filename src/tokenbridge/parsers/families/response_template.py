"""``hf`` and ``beam``: the output format is data, the checkpoint's ``response_template``.

A response template (``tokenizer_config.json`` key ``response_template``, read by
transformers and by vLLM 0.33's ``ResponseTemplateParser``) names the message's fields
(``thinking``, ``content``, ``tool_calls``), each with an opener and a closer (a literal, a
list of literals or a regex), a body format (``text``, ``json``, ``xml-inline``,
``kv-lines``) and an optional ``transform`` that shapes the parsed body into
``{"type": "function", "function": {"name", "arguments"}}``. At most one field has no
opener: the "implicit" field that takes text outside every explicit region. ``start_anchor``
marks where the assistant message begins in the prompt, so a region the prompt opened (a
prefilled ``<think>``) is already open when the output starts.

The scan is vLLM's: in the implicit region every explicit opener (and the implicit closer) is
watched, inside an explicit region only its closer. A delimiter that is only partly present,
or a complete one that more text could still extend (regexes, literal lists where one literal
prefixes another), is held; the earliest committable delimiter wins (longest on ties, openers
before closers). At the end every complete match is final and the open region closes.

Routing (vLLM with no reasoning parser of its own in front): thinking and content text is
content, delimiters dropped; a tool region emits its calls when it closes and parses (nothing
if it is malformed or any call lacks a name or arguments); under ``tool_choice="none"`` tool
regions stay in content verbatim. Beam differs from ``hf`` only in the grammar it constrains
the request with, not in parsing. ``beam`` and ``hf`` pair only with the reasoning parser of
the same name, which removes the thinking regions before this parser sees the text.

``hf`` and ``beam``: reasoning is the ``thinking`` regions of the checkpoint's response template.

vLLM 0.33 serves these names with one combined parser (``ResponseTemplateParser``, or
``BeamParser`` which differs only in the grammar it constrains requests with): a single scan
of the output in which thinking-region text is reasoning. Here the scan is the tool side's
``RegionScanner``; this parser takes the thinking regions (their text as reasoning, their
delimiters dropped) and leaves the rest:

* to the tool parser, unchanged, when one follows (it scans the same text again and skips a
  thinking region the prompt left open);
* routed as vLLM routes it with no tool parsing, when none does: content regions' text (their
  delimiters dropped), tool regions verbatim, text outside every region dropped.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, Stateful, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.template import (
    PASSTHROUGH,
    THINKING,
    TOOLS,
    Field,
    Template,
    calls_of,
    cast_arguments,
    compiled_template,
    properties_by_tool,
)
from tokenbridge.parsers.base import ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.engine.template import (
    CONTENT,
    TemplateError,
)
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_ON


class ScannerState(ParserState):
    buf: str  # unread text (held back as a possible delimiter)
    prompt_left: Annotated[int, msgspec.Meta(ge=0)]  # leading chars of ``buf`` that came from the prompt
    current: str | None  # the region the scan is in (a field of the template)
    opened: bool
    body: str  # a tool region's text so far
    captures: dict[str, str]


class RegionScanner(Stateful):
    """The delimiter scan over a growing text, as a list of events.

    Events: ``("chunk", field, text)``, ``("open", field, delimiter_text)``,
    ``("close", field, delimiter_text, value)``, ``("malformed", field, delimiter_text)``.
    Delimiter text excludes what belongs to the prompt.
    """

    State = ScannerState

    def __init__(self, template: Template, props: dict[str, dict]) -> None:
        self.t = template
        self.props = props
        self.buf = ""  # unread text (held back as a possible delimiter)
        self.prompt_left = 0  # leading chars of ``buf`` that came from the prompt
        self.current = template.implicit
        self.opened = False
        self.body = ""  # a tool region's text so far
        self.captures: dict[str, str] = {}

    def load(self, state: ScannerState) -> None:
        if state.current is not None and state.current not in self.t.fields:
            raise ValueError(f"bad response template state: no field {state.current!r}")
        super().load(state)

    def load_prompt(self, prompt: str) -> None:
        text = self.t.message_text(prompt)
        if text:
            self.prompt_left = len(text)
            self.feed(text, eos=False)

    def reset(self) -> None:
        self.current, self.opened, self.body, self.captures = self.t.implicit, False, "", {}

    def _watch(self) -> list[tuple[str, Field]]:
        if self.current is not None and self.current != self.t.implicit:
            f = self.t.fields[self.current]
            return [("close", f)] if f.closer else []
        out = [("open", f) for f in self.t.fields.values() if f.opener]
        if self.t.implicit is not None and self.t.fields[self.t.implicit].closer:
            out.append(("close", self.t.fields[self.t.implicit]))
        return out

    def _can_grow(self, kind: str, f: Field, m: Any) -> bool:
        if m.end() != len(self.buf):
            return False
        if m.start() == m.end():
            return True
        d = f.opener if kind == "open" else f.closer
        return d.literals is None or d.can_grow

    def _scan(self, eos: bool) -> tuple[Any, int]:
        best_key, best, hold = None, None, len(self.buf)
        for kind, f in self._watch():
            pattern = (f.opener if kind == "open" else f.closer).pattern
            m = pattern.search(self.buf) if eos else pattern.search(self.buf, partial=True)
            if m is None:
                continue
            if not eos and (m.partial or self._can_grow(kind, f, m)):
                hold = min(hold, m.start())
                continue
            key = (m.start(), m.start() - m.end(), 0 if kind == "open" else 1, f.name)
            if best_key is None or key < best_key:
                best_key, best = key, (kind, f, m)
        if best is not None and best[2].start() >= hold:
            best = None
        return best, hold

    def _consume(self, n: int) -> str:
        """Drop ``n`` read chars; return the part of them that is output, not prompt."""
        taken, self.buf = self.buf[:n], self.buf[n:]
        skip = min(self.prompt_left, n)
        self.prompt_left -= skip
        return taken[skip:]

    def _text(self, n: int, events: list) -> None:
        if n <= 0:
            return
        raw = self.buf[:n]
        out = self._consume(n)
        if self.current is None:
            return
        f = self.t.fields[self.current]
        self.opened = True
        if f.keeps_body:
            self.body += raw
        if out:
            events.append(("chunk", self.current, out))

    def _close(self, delim: str, events: list) -> None:
        if self.current is None or not self.opened:
            self.reset()
            return
        f = self.t.fields[self.current]
        try:
            value = f.value(self.body, self.captures) if f.keeps_body else None
            if self.props and value is not None:
                value = cast_arguments(value, self.props)
        except (KeyError, TypeError, ValueError):
            events.append(("malformed", f.name, delim))
        else:
            events.append(("close", f.name, delim, value))
        self.reset()

    def feed(self, text: str, eos: bool) -> list:
        self.buf += text
        events: list = []
        while True:
            best, hold = self._scan(eos)
            if best is not None:
                kind, f, m = best
                self._text(m.start(), events)
                width = m.end() - m.start()
                delim = self._consume(width)
                if kind == "open":
                    self._close("", events)
                    self.current, self.opened, self.body = f.name, True, ""
                    self.captures = {k: v for k, v in m.groupdict().items() if v is not None}
                    events.append(("open", f.name, delim))
                else:
                    had_text = self.opened
                    self._close(delim, events)
                    if not had_text and width == 0:
                        break
                continue
            if eos:
                self._text(len(self.buf), events)
                self._close("", events)
                break
            self._text(hold, events)
            break
        return events

    def closer_rest(self) -> str:
        """The rest of a closer the output stopped inside, when only the next message's
        start anchor (which doubles as the closer's tail) is missing."""
        if self.current is None or not self.opened:
            return ""
        f = self.t.fields[self.current]
        for closer in f.closer.literals or ():
            for anchor in self.t.anchor_literals():
                if not anchor or closer == anchor or not closer.endswith(anchor):
                    continue
                for cut in range(len(closer) - 1, len(closer) - len(anchor) - 1, -1):
                    if self.buf.endswith(closer[:cut]):
                        return closer[cut:]
        return ""


class TemplateToolState(ParserState):
    scanner: ScannerState
    index: Annotated[int, msgspec.Meta(ge=0)]  # the next call's index
    fed: bool  # any output arrived (an empty output closes nothing)
    primed: bool  # the prompt was read (once, not on every restore)


class ResponseTemplateToolParser(ToolParser):
    """Streams thinking/content text as content; emits each tool region's calls when it closes.

    ``supports_required_and_named`` is False: vLLM parses ``required``/named choices with
    the template too (it rejects them at render time, where no grammar can force them).
    ``engine_based``: the template parser runs under ``tool_choice="none"`` as well, keeping
    tool regions as content. Content is never nulled for being blank.
    """

    supports_required_and_named: ClassVar[bool] = False
    engine_based: ClassVar[bool] = True
    blank_content_is_null: ClassVar[bool] = False
    State = TemplateToolState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        # vLLM refuses to start without a template; here the text then stays content.
        spec = ctx.response_template if ctx.response_template is not None else PASSTHROUGH
        self.template = compiled_template(spec)
        self.scanner = RegionScanner(self.template, properties_by_tool(ctx.tools))
        self.parse_tools = ctx.tool_choice != "none"
        self.index = 0
        self.fed = False  # any output arrived (an empty output closes nothing)
        self.primed = False  # the prompt was read (once, not on every restore)

    def _prime(self) -> None:
        if self.primed:
            return
        self.primed = True
        ctx = self.ctx
        ids = ctx.prompt_token_ids
        if ids and ctx.vocab is not None and hasattr(ctx.vocab, "decode"):
            self.scanner.load_prompt(ctx.vocab.decode(list(ids), skip_special_tokens=False))
        if ctx.reasoning_parser and self.scanner.current == THINKING:
            # The reasoning parser in front consumed the open thinking region.
            self.scanner.buf, self.scanner.prompt_left = "", 0
            self.scanner.reset()

    def _route(self, events: list, out: Delta) -> None:
        for ev in events:
            kind, field = ev[0], ev[1]
            if field == TOOLS:
                if not self.parse_tools:
                    text = ev[2]
                    if text:
                        out.content += text
                elif kind == "close":
                    for name, args in calls_of(ev[3]):
                        out.tool_calls.append(ToolCallDelta(self.index, name=name, arguments=args))
                        self.index += 1
            elif kind == "chunk":
                out.content += ev[2]

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        self._prime()
        out = Delta()
        if text:
            self.fed = True
            self._route(self.scanner.feed(text, eos=False), out)
        return out

    def finish(self) -> Delta:
        self._prime()
        out = Delta()
        if self.fed:
            events = self.scanner.feed(self.scanner.closer_rest(), eos=False)
            self._route(events + self.scanner.feed("", eos=True), out)
            self.fed = False
        return out



@tool_parser("hf", family="response_template")
class HfToolParser(ResponseTemplateToolParser):
    pass


@tool_parser("beam", family="response_template")
class BeamToolParser(ResponseTemplateToolParser):
    pass


class ReasoningScanner(RegionScanner):
    """The region scan plus two events the split needs: ``("begin", field)`` when the implicit
    region starts taking text, and ``("chunk", None, text)`` for text outside every region."""

    def _text(self, n: int, events: list) -> None:
        if n <= 0:
            return
        if self.current is None:
            out = self._consume(n)
            if out:
                events.append(("chunk", None, out))
            return
        if not self.opened:
            events.append(("begin", self.current))
        super()._text(n, events)


def _template(ctx: ParseContext) -> Template:
    # vLLM refuses to start without a (servable) template; here the text then stays content.
    try:
        return compiled_template(ctx.response_template if ctx.response_template is not None else PASSTHROUGH)
    except TemplateError:
        return compiled_template(PASSTHROUGH)


def _prompt_text(ctx: ParseContext, prompt_token_ids: list[int] | None) -> str:
    vocab = ctx.vocab
    if not prompt_token_ids or vocab is None or not hasattr(vocab, "decode"):
        return ""
    return vocab.decode(list(prompt_token_ids), skip_special_tokens=False)


class TemplateReasoningState(ParserState):
    scanner: ScannerState
    fed: bool  # any output arrived (an empty output closes nothing)
    primed: bool  # the prompt was read (once, not on every restore)


class ResponseTemplateReasoningParser(ReasoningParser):
    """Streams thinking text as reasoning; the rest goes on as described in the module doc."""

    engine_based: ClassVar[bool] = True
    State = TemplateReasoningState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.template = _template(ctx)
        self.scanner = ReasoningScanner(self.template, {})
        self.tool_follows = False
        self.fed = False  # any output arrived (an empty output closes nothing)
        self.primed = False  # the prompt was read (once, not on every restore)

    def set_tool_follows(self, follows: bool) -> None:
        self.tool_follows = follows

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """vLLM's check: the prompt's message closed a thinking region or is inside a content
        or tool region; else probe one character past the prompt; else thinking must be off."""
        template = _template(ctx)
        spec = ((ctx.response_template or {}).get("fields") or {}).get(THINKING)
        if THINKING not in template.fields:
            return True
        if isinstance(spec, dict) and spec.get("repeats"):
            return False
        scanner = ReasoningScanner(template, {})
        text = template.message_text(_prompt_text(ctx, prompt_token_ids))
        scanner.prompt_left = len(text)
        active, closed = None, False
        for ev in scanner.feed(text, eos=False):
            if ev[0] in ("open", "begin"):
                active = ev[1]
            elif ev[0] in ("close", "malformed"):
                closed |= ev[1] == THINKING
                active = None
        if closed or active in (CONTENT, TOOLS):
            return True
        for ev in scanner.feed("\0", eos=False):
            if ev[0] == "open" and ev[1] in (CONTENT, TOOLS):
                return True
            if ev[1] == THINKING:
                if ev[0] in ("open", "begin"):
                    return False
                if ev[0] in ("close", "malformed"):
                    return True
        if active == THINKING:
            return False
        return not ENABLE_THINKING_DEFAULT_ON.of(ctx)

    def _prime(self) -> None:
        if not self.primed:
            self.primed = True
            self.scanner.load_prompt(_prompt_text(self.ctx, self.ctx.prompt_token_ids))

    def _route(self, events: list, reasoning: list[str], content: list[str]) -> None:
        for ev in events:
            kind, field = ev[0], ev[1]
            if kind == "begin":
                continue
            if field == THINKING:
                if kind == "chunk":
                    reasoning.append(ev[2])
            elif self.tool_follows or field == TOOLS or (kind == "chunk" and field is not None):
                content.append(ev[2])

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        self._prime()
        r: list[str] = []
        c: list[str] = []
        if text:
            self.fed = True
            self._route(self.scanner.feed(text, eos=False), r, c)
        return "".join(r), "".join(c)

    def finish(self) -> tuple[str, str]:
        self._prime()
        r: list[str] = []
        c: list[str] = []
        if self.fed:
            self.fed = False
            # A following tool parser completes a cut closer of its own regions itself.
            own = not self.tool_follows or self.scanner.current == THINKING
            rest = self.scanner.closer_rest() if own else ""
            events = self.scanner.feed(rest, eos=False)
            self._route(events + self.scanner.feed("", eos=True), r, c)
        return "".join(r), "".join(c)



@reasoning_parser("hf", family="response_template")
class HfReasoningParser(ResponseTemplateReasoningParser):
    pass


@reasoning_parser("beam", family="response_template")
class BeamReasoningParser(ResponseTemplateReasoningParser):
    """Beam parses as ``hf`` does; its grammar (not reproduced here) is what differs."""
