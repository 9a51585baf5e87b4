"""Muse (Spark, Glimmer) reasoning, routed by recipient on the whole output (Spark: none/``self``
messages; Glimmer: ``to=self`` spans), as vLLM 0.33 does. The tool calls are in ``muse.py``.
"""

from __future__ import annotations

import re

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.held import WholeTextParser, decoded_prompt
from tokenbridge.parsers.registry import reasoning_parser


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
