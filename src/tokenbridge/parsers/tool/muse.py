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
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.held import Extraction, HeldCallsParser, JsonFamily

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
