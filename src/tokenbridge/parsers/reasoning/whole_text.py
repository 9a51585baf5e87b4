"""Formats whose vLLM split depends on the whole output, so the output is held until the end.

Granite's phrase markers, K2 Horizon's effort markers, Ernie-4.5's ``<response>`` window,
Olmo 3's optional text markers and Hunyuan-A13B's ``<answer>`` block
decide reasoning versus content only once the closing marker is seen (or not), so any text
emitted early could be wrong. These parsers buffer and split once, in ``finish``: exact and
chunking-invariant, at the price of a snapshot that grows with the output.
"""

from __future__ import annotations

import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.engine.lexer import token_id
from tokenbridge.parsers.engine.held import WholeTextParser, decoded_prompt


_K2H_EFFORT = {
    "high": ("<ifm|think>", "</ifm|think>"),
    "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
    "low": ("<ifm|think_faster>", "</ifm|think_faster>"),
}
_K2H_TOOL_CALLS = "<ifm|tool_calls>"


@reasoning_parser("k2_horizon", family="k2_horizon")
class K2HorizonReasoningParser(WholeTextParser):
    """K2 Horizon: markers by ``reasoning_effort``; without an end marker, reasoning ends at
    ``<ifm|tool_calls>`` or, failing that, everything is content."""

    name = "k2_horizon"

    @staticmethod
    def _markers(ctx: ParseContext) -> tuple[str, str]:
        return _K2H_EFFORT.get(ctx.kwarg("reasoning_effort", "high"), _K2H_EFFORT["high"])

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = (token_id(ctx.vocab, m) for m in cls._markers(ctx))
        tool = token_id(ctx.vocab, _K2H_TOOL_CALLS)
        for t in reversed(prompt_token_ids):
            if t == start:
                return False
            if t == end or t == tool:
                return True
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        start, end = self._markers(self.ctx)
        text = text.removeprefix(start)
        if end in text:
            reasoning, _, content = text.partition(end)
            return reasoning, content or None
        i = text.find(_K2H_TOOL_CALLS)
        if i != -1:
            return text[:i], text[i:]
        return "", text or None


@reasoning_parser("ernie45", family="ernie45")
class Ernie45ReasoningParser(WholeTextParser):
    """Ernie-4.5: R1 rules, then the content is narrowed to ``<response>…</response>``."""

    name = "ernie45"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        start, end = token_id(ctx.vocab, "<think>"), token_id(ctx.vocab, "</think>")
        for t in reversed(prompt_token_ids):
            if t == start:
                return False
            if t == end:
                return True
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        before, found, after = text.partition("<think>")
        text = after if found else before
        if "</think>" not in text:
            return text, None
        reasoning, _, content = text.partition("</think>")
        i, j = content.find("<response>"), content.rfind("</response>")
        if i != -1 and j != -1 and i < j:
            content = content[i + len("<response>") : j]
        return reasoning, content or None


@reasoning_parser("olmo3", family="olmo3")
class Olmo3ReasoningParser(WholeTextParser):
    """Olmo 3: an optional leading ``<think>``, reasoning up to the first ``</think>``; without
    an end marker the whole output is content. Both markers are plain text, not tokens."""

    name = "olmo3"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """``</think>`` as its pre-token pieces: ``</`` (or ``Ġ</``), ``think``, ``>``."""
        vocab = ctx.vocab
        first = {token_id(vocab, t) for t in ("Ġ</", "</")} - {None}
        rest = [token_id(vocab, t) for t in ("think", ">")]
        if not first or None in rest:
            return False
        ids = prompt_token_ids
        return any(
            ids[i] in first and ids[i + 1 : i + 3] == rest for i in range(len(ids) - 2)
        )

    def split(self, text: str) -> tuple[str | None, str | None]:
        body = text.removeprefix("<think>")
        reasoning, found, content = body.partition("</think>")
        if not found:
            return None, text
        return reasoning or None, content or None


_HUNYUAN_THINK = "<think>\n"
_HUNYUAN_ANSWER = "\n</think>\n<answer>\n"
_HUNYUAN_ANSWER_END = "\n</answer>"
_HUNYUAN_FULL = re.compile(
    rf"(?:{_HUNYUAN_THINK}(.*?){_HUNYUAN_ANSWER})?(.*?){_HUNYUAN_ANSWER_END}", re.DOTALL
)
_HUNYUAN_HALF = re.compile(rf"{_HUNYUAN_THINK}(.*?){_HUNYUAN_ANSWER}(.*)", re.DOTALL)


@reasoning_parser("hunyuan_a13b", family="hunyuan_a13b")
class HunyuanA13BReasoningParser(WholeTextParser):
    """Hunyuan-A13B: ``<think>\\n…\\n</think>\\n<answer>\\n…\\n</answer>``, all plain text.

    A closing ``\\n</answer>`` bounds the content (text after it is dropped) and makes the
    think block optional; without it, a think block followed by ``<answer>`` is needed (the
    content runs to the end), else everything is content.
    """

    name = "hunyuan_a13b"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        # vLLM's check reads its streaming state, which a fresh parser has not left.
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        m = _HUNYUAN_FULL.search(text)
        if m:
            reasoning, content = m.group(1) or "", m.group(2)
        else:
            m = _HUNYUAN_HALF.search(text)
            if not m:
                return None, text
            reasoning, content = m.groups()
            content = content.removesuffix(_HUNYUAN_ANSWER_END)
        return reasoning or None, content or None


# -- Muse (ATEM channels) ---------------------------------------------------------------------

_MUSE_HEADER = re.compile(r"(?:<\|start\|>assistant\s*)?(?:to=(?P<to>[^\s<]+))?<\|message\|>")
_MUSE_BODY_END = re.compile(r"<\|eom\|>|<\|eot\|>|<\|start\|>")
_MUSE_OTHER_ROLE = re.compile(r"<\|start\|>(?!assistant(?:\s|<|$))[^\s<]+")
_MUSE_PLAIN = (None, "self", "user", "commentary", "developer")
_ATEM_CALLS = ("<atem:function_calls>", "<atem:invoke")
_ASSISTANT_OPEN = "<|start|>assistant"


def _muse_messages(text: str) -> list[tuple[str | None, str, str]]:
    """``(recipient, body, framed)`` per ``to=…<|message|>`` header; a body stops at the
    first ``<|eom|>``/``<|eot|>``/``<|start|>`` before the next header."""
    heads = list(_MUSE_HEADER.finditer(text))
    out = []
    for i, h in enumerate(heads):
        stop = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        b = _MUSE_BODY_END.search(text, h.end(), stop)
        body = text[h.end() : b.start() if b else stop]
        out.append((h.group("to"), body, text[h.start() : stop]))
    return out


def _has_atem_call(body: str) -> bool:
    return any(m in body for m in _ATEM_CALLS)


class _MuseParser(WholeTextParser):
    """A Muse format, whose reasoning vLLM ends in the prompt only by a tool channel."""

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """vLLM decodes the prompt: only a tool channel in the current turn ends reasoning."""
        text = decoded_prompt(prompt_token_ids, ctx)
        if text is None:
            return False
        return cls.tool_channel_opened(text)

    @staticmethod
    def tool_channel_opened(text: str) -> bool:
        raise NotImplementedError


@reasoning_parser("musespark1x", "muse", family="muse")
class MuseReasoningParser(_MuseParser):
    """Muse Spark: each ``to=<recipient><|message|>`` message is routed by recipient —
    none/``self`` to reasoning, ``user``/``commentary`` to content; with a tool message
    present the content is every non-reasoning, non-developer message, framing included."""

    name = "musespark1x"

    @staticmethod
    def tool_channel_opened(text: str) -> bool:
        roles = list(_MUSE_OTHER_ROLE.finditer(text))
        if roles:
            at = text.find(_ASSISTANT_OPEN, roles[-1].end())
            text = text[at:] if at != -1 else ""
        return any(
            to not in _MUSE_PLAIN and _has_atem_call(body) for to, body, _ in _muse_messages(text)
        )

    def split(self, text: str) -> tuple[str | None, str | None]:
        msgs = _muse_messages(text)
        if not msgs:
            return None, text or None
        reasoning = "".join(body for to, body, _ in msgs if to in (None, "self"))
        if any(to not in _MUSE_PLAIN and _has_atem_call(body) for to, body, _ in msgs):
            content = "".join(f for to, _, f in msgs if to not in (None, "self", "developer"))
        else:
            content = "".join(body for to, body, _ in msgs if to in ("user", "commentary"))
        return reasoning or None, content or None


_GLIMMER_HEADER = r"to=[^\s<]+<\|message\|>"
_GLIMMER_SELF = r"to=self<\|message\|>"
_GLIMMER_BETWEEN = re.compile(rf"<\|eom\|>(?:(?!{_GLIMMER_SELF}).)*?{_GLIMMER_SELF}", re.DOTALL)
_GLIMMER_CLOSED = re.compile(rf"{_GLIMMER_SELF}(.*?)<\|eom\|>", re.DOTALL)
_GLIMMER_OPEN_BODY = rf"((?:(?!<\|eom\|>)(?!{_GLIMMER_HEADER}).)*)(?={_GLIMMER_HEADER}|$)"
_GLIMMER_OPEN = re.compile(_GLIMMER_SELF + _GLIMMER_OPEN_BODY, re.DOTALL)
_GLIMMER_PREFIX = r"(?:<\|start\|>assistant\s*)?"
_GLIMMER_STRIP_CLOSED = re.compile(rf"{_GLIMMER_PREFIX}{_GLIMMER_SELF}.*?<\|eom\|>", re.DOTALL)
_GLIMMER_STRIP_OPEN = re.compile(_GLIMMER_PREFIX + _GLIMMER_SELF + _GLIMMER_OPEN_BODY, re.DOTALL)
_GLIMMER_USER = re.compile(r"to=user<\|message\|>(.*?)(?=<\|eot\|>|<\|eom\|>|$)", re.DOTALL)


@reasoning_parser("muse_glimmer", family="muse")
class MuseGlimmerReasoningParser(_MuseParser):
    """Muse Glimmer: ``to=self<|message|>…<|eom|>`` spans are reasoning (joined by newlines,
    an unterminated one last); the first ``to=user`` body is the content, unless a tool
    channel remains once the reasoning spans are cut out (then that remainder is)."""

    name = "muse_glimmer"

    @staticmethod
    def tool_channel_opened(text: str) -> bool:
        at = text.rfind(_ASSISTANT_OPEN)
        if at != -1:
            text = text[at + len(_ASSISTANT_OPEN) :]
        text = _GLIMMER_STRIP_OPEN.sub("", _GLIMMER_STRIP_CLOSED.sub("", text))
        for h in re.finditer(r"to=(?P<to>[^\s<]+)<\|message\|>", text):
            if h.group("to") not in ("self", "user"):
                return _has_atem_call(text[h.start() :])
        return False

    def split(self, text: str) -> tuple[str | None, str | None]:
        spans = _GLIMMER_CLOSED.findall(_GLIMMER_BETWEEN.sub("\n", text))
        reasoning = "\n".join(spans) if spans else None
        m = _GLIMMER_OPEN.search(text)
        if m and m.group(1):
            reasoning = f"{reasoning}\n{m.group(1)}" if reasoning else m.group(1)
        rest = _GLIMMER_STRIP_OPEN.sub("", _GLIMMER_STRIP_CLOSED.sub("", text))
        if _has_atem_call(rest):
            return reasoning, rest or None
        m = _GLIMMER_USER.search(text)
        if m:
            return reasoning, m.group(1) or None
        if "to=self<|message|>" in text:
            return reasoning, None
        return None, text or None




