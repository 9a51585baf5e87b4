"""Muse (Spark, Glimmer): ATEM calls inside recipient-addressed messages.

    <|start|>assistant to=self<|message|>…<|eom|>
    <|start|>assistant to=tool.fn<|message|><atem:function_calls>
    <atem:invoke name="tool.fn"><atem:parameter name="k">v</atem:parameter></atem:invoke>
    </atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>…<|eot|>

vLLM 0.33's one-shot rules, replayed on the whole text (held until ``finish()``: whether any
of it is content depends on the framing that follows):

* the text is cut into messages at each header (``<|start|>assistant``, an optional
  `` to=NAME``, then ``<|message|>``); a message ends at ``<|eom|>``/``<|eot|>``, the next
  header or a stray ``<|start|>``;
* calls are the complete ``<atem:invoke …>…</atem:invoke>`` in messages addressed to a
  non-channel recipient (or in the whole text when it has no header at all); a parameter
  value is JSON-decoded when it parses, kept raw otherwise, and always raw for a
  string-typed parameter (Spark only); ``x.x`` names collapse to a registered ``x``;
* content is the user-facing messages' bodies, or the whole text when unframed.

Reasoning is routed by recipient too (Spark: none/``self`` messages; Glimmer: ``to=self``
spans), on the whole output.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily, WholeTextParser, decoded_prompt

_HEADER = re.compile(
    r"(?:<\|start\|>\s*assistant)?[^\S\n]*(?:to=(?P<rcpt>[A-Za-z0-9_.\-]+))?<\|message\|>"
)
_END = re.compile(r"<\|eom\|>|<\|eot\|>")
_INVOKE = re.compile(r"(<atem:invoke\b.*?</atem:invoke>)", re.DOTALL)
_INVOKE_NAME = re.compile(r'<atem:invoke\b[^>]*?\bname="([^"]+)"')
_PARAM = re.compile(
    r'<atem:parameter\b[^>]*?\bname="(?P<key>[^"]+)"[^>]*?>(?P<value>.*?)</atem:parameter>',
    re.DOTALL,
)
_CALLS_OPEN = "<atem:function_calls>"


class MuseDialect:
    """Which recipients are reasoning, content or no tool, and whether strings stay raw."""

    def __init__(self, reasoning: tuple, content: tuple, non_tool: tuple, raw_strings: bool):
        self.reasoning = reasoning
        self.content = content
        self.non_tool = non_tool
        self.raw_strings = raw_strings


SPARK = MuseDialect((None, "self"), ("user", "commentary"),
                    ("self", "user", "commentary", "developer"), True)
GLIMMER = MuseDialect(("self",), (None, "user"), ("self", "user"), False)


def messages(text: str) -> list[tuple[str | None, str]]:
    """``(recipient, body)`` of each message, in order."""
    out = []
    pos = 0
    while pos < len(text):
        header = _HEADER.search(text, pos)
        if header is None:
            break
        start = header.end()
        end = _END.search(text, start)
        nxt = _HEADER.search(text, start)
        body_end = end.start() if end is not None else len(text)
        if nxt is not None and nxt.start() < body_end:
            body_end = next_pos = nxt.start()
        else:
            next_pos = end.end() if end is not None else len(text)
        body = text[start:body_end]
        cut = body.find("<|start|>")
        out.append((header.group("rcpt"), body if cut == -1 else body[:cut]))
        pos = next_pos
    return out


def _decoded(raw: str):
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _tool_names(ctx: ParseContext) -> set[str]:
    return {n for n in ctx.tool_names() if n}


def _string_params(ctx: ParseContext) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for tool in ctx.tools or []:
        fn = (tool.get("function") or tool) if isinstance(tool, dict) else None
        if not isinstance(fn, dict):
            continue
        name, params = fn.get("name"), fn.get("parameters")
        if name and isinstance(params, dict):
            out[name] = {
                k for k, s in (params.get("properties") or {}).items()
                if isinstance(s, dict) and s.get("type") == "string"
            }
    return out


def _bound_name(emitted: str, registered: set[str]) -> str:
    if not registered or emitted in registered:
        return emitted
    head, sep, tail = emitted.partition(".")
    return head if sep and head == tail and head in registered else emitted


def _content(text: str, d: MuseDialect) -> str | None:
    content, reasoning = [], []
    for rcpt, body in messages(text):
        if rcpt in d.reasoning:
            reasoning.append(body)
        elif rcpt in d.content:
            content.append(body)
    if "".join(content):
        return "".join(content)
    if not "".join(reasoning) and _HEADER.search(text) is None:
        return text or None
    return None


def _calls(text: str, ctx: ParseContext, d: MuseDialect) -> list[tuple[str, str]]:
    bodies = [b for r, b in messages(text) if r is not None and r not in d.non_tool]
    if bodies:
        scoped = "\n".join(bodies)
    elif _HEADER.search(text) is None:
        scoped = text
    else:
        scoped = ""
    registered = _tool_names(ctx)
    strings = _string_params(ctx) if d.raw_strings else {}
    calls = []
    for invoke in _INVOKE.findall(scoped):
        m = _INVOKE_NAME.search(invoke)
        if not m:
            continue
        name = _bound_name(m.group(1), registered)
        raw_keys = strings.get(name, set())
        args = {}
        for p in _PARAM.finditer(invoke):
            key, raw = p.group("key"), p.group("value")
            args[key] = raw if key in raw_keys else _decoded(raw)
        calls.append((name, json.dumps(args, ensure_ascii=False)))
    return calls


def extractor(d: MuseDialect):
    def extract(text: str, ctx: ParseContext) -> Extraction:
        calls = []
        if _CALLS_OPEN in text or "<atem:invoke" in text:
            calls = _calls(text, ctx, d)
        return Extraction(_content(text, d), calls)

    return extract


class MuseToolParser(HeldCallsParser):
    """vLLM's ``muse`` / ``musespark1x`` (Muse Spark) format."""

    family = JsonFamily("muse", extractor(SPARK))
    supports_required_and_named: ClassVar[bool] = False


class MuseGlimmerToolParser(HeldCallsParser):
    """vLLM's ``muse_glimmer``: Spark's format, other recipients, no raw-string parameters."""

    family = JsonFamily("muse_glimmer", extractor(GLIMMER))
    supports_required_and_named: ClassVar[bool] = False


tool_parser("muse", "musespark1x", family="muse")(MuseToolParser)
tool_parser("muse_glimmer", family="muse")(MuseGlimmerToolParser)


# -- reasoning ---------------------------------------------------------------------------------

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
