"""``hf`` and ``beam``: reasoning is the ``thinking`` regions of the checkpoint's response template.

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

from typing import Any, ClassVar

from tokenbridge.parsers.base import ParseContext, ReasoningParser
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.engine.template import (
    CONTENT,
    PASSTHROUGH,
    THINKING,
    TOOLS,
    Template,
    TemplateError,
    compiled_template,
)
from tokenbridge.parsers.tool.response_template import RegionScanner
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_ON


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


class ResponseTemplateReasoningParser(ReasoningParser):
    """Streams thinking text as reasoning; the rest goes on as described in the module doc."""

    engine_based: ClassVar[bool] = True

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

    def snapshot(self) -> Any:
        return [self.scanner.state(), self.fed, self.primed]

    def restore(self, snap: Any) -> None:
        if not isinstance(snap, list) or len(snap) != 3 or not isinstance(snap[0], list):
            raise ValueError("unexpected reasoning parser state")
        self.scanner.set_state(snap[0])
        self.fed, self.primed = bool(snap[1]), bool(snap[2])


@reasoning_parser("hf", family="response_template")
class HfReasoningParser(ResponseTemplateReasoningParser):
    pass


@reasoning_parser("beam", family="response_template")
class BeamReasoningParser(ResponseTemplateReasoningParser):
    """Beam parses as ``hf`` does; its grammar (not reproduced here) is what differs."""
