"""Tool calls written as a marker plus a JSON body (hermes ``<tool_call>{…}</tool_call>``,
Llama ``{"name": …, "parameters": …}``, Phi-4-mini ``functools[…]``, …).

vLLM 0.33's non-streaming answer for these families is a function of the *whole* text: one
invalid call turns the entire output back into content, and text before a call is kept or
dropped depending on whether every call parses. So the engine here never guesses:

* text that is content whatever follows (before the family's first start marker, for the
  families that keep it) is emitted as it arrives, holding back only a possible partial marker;
* from the first start marker on (or from the start, for families that drop leading content),
  the text is held and decided once, by the family's extraction function, in ``finish()``.

Every chunking therefore accumulates to the one-shot result. The hold-back is the undecided
text itself, so ``snapshot()`` is that string plus a flag.

A family is one row of :data:`FAMILIES`: its extraction function (vLLM's rules for content
before/after calls, invalid JSON, missing end marker, argument serialization) and the marker
before which content may be streamed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, NamedTuple

from tokenbridge.parsers.base import Delta, ParseContext, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.text import dumps_args, partial_suffix


class Extraction(NamedTuple):
    """A family's one-shot answer: content (``None`` = vLLM's null) and ``(name, arguments)``."""

    content: str | None
    calls: list[tuple[str, str]]


def as_content(text: str) -> Extraction:
    return Extraction(text, [])


def call_from_object(obj: Any, args_keys: tuple[str, ...]) -> tuple[str, str]:
    """``(name, arguments)`` of a ``{"name": …, <args key>: …}`` object.

    Raises like vLLM does (missing key, non-object, non-string name), so callers fall back.
    """
    if not isinstance(obj, dict):
        raise TypeError("tool call is not an object")
    name = obj["name"]
    if not isinstance(name, str):
        raise TypeError("tool name is not a string")
    for key in args_keys[:-1]:
        if key in obj:
            return name, dumps_args(obj[key])
    return name, dumps_args(obj[args_keys[-1]])


def extract_tagged(start: str, end: str) -> Callable[[str, ParseContext], Extraction]:
    """Hermes-style ``<start>{"name", "arguments"}<end>`` calls.

    Every start marker opens a call whose body runs to the next end marker, or to the end of
    the text when none follows. Any body that is not a ``{"name": str, "arguments": …}`` object
    makes the whole text content. Content is the text before the first start marker; text
    between and after calls is dropped.
    """
    pattern = re.compile(f"{re.escape(start)}(.*?){re.escape(end)}|{re.escape(start)}(.*)", re.S)

    def extract(text: str, ctx: ParseContext) -> Extraction:
        if start not in text:
            return as_content(text)
        try:
            calls = [
                call_from_object(json.loads(closed or open_), ("arguments",))
                for closed, open_ in pattern.findall(text)
            ]
        except Exception:
            return as_content(text)
        return Extraction(text[: text.find(start)] or None, calls)

    return extract


LLAMA_BOT = "<|python_tag|>"
_DECODER = json.JSONDecoder()


def extract_llama_json(text: str, ctx: ParseContext) -> Extraction:
    """Llama 3.x/4 JSON calls: every ``{`` outside an already parsed object must start a
    ``{"name", "arguments" | "parameters"}`` object (separators such as ``; `` and any prose
    are ignored); otherwise the whole text is content. With calls, content is null.

    vLLM skips a ``{`` at or before the end index of the previous object, so an object glued
    to the previous one (``}{``) is skipped too.
    """
    if LLAMA_BOT not in text and "{" not in text:
        return as_content(text)
    end_index = -1
    calls: list[tuple[str, str]] = []
    start = text.find("{")
    while start != -1:
        if start > end_index:
            try:
                obj, length = _DECODER.raw_decode(text[start:])
                end_index = start + length
                calls.append(call_from_object(obj, ("arguments", "parameters")))
            except Exception:
                return as_content(text)
        start = text.find("{", start + 1)
    return Extraction(None, calls) if calls else as_content(text)


_PHI4_CALLS = re.compile(r"functools\[(.*?)\]", re.S)


def extract_phi4_mini(text: str, ctx: ParseContext) -> Extraction:
    """Phi-4-mini ``functools[{…}, …]``: the first ``functools[`` up to the first ``]``.

    Content is always null once that pattern matches; a body that is not valid JSON yields no
    calls at all (vLLM reports "tools called" with an empty list), while a valid array with a
    malformed entry makes the whole text content.
    """
    m = _PHI4_CALLS.search(text)
    if m is None:
        return as_content(text)
    try:
        entries = json.loads("[" + m.group(1) + "]")
    except json.JSONDecodeError:
        entries = []
    try:
        calls = [call_from_object(e, ("arguments", "parameters")) for e in entries]
    except Exception:
        return as_content(text)
    return Extraction(None, calls)


@dataclass(frozen=True)
class JsonFamily:
    """One marker + JSON body format."""

    name: str
    extract: Callable[[str, ParseContext], Extraction]
    # Content before this marker is content whatever follows, so it may stream; None means
    # leading content depends on later text and everything is held until finish().
    stream_before: str | None = None


class HeldCallsParser(ToolParser):
    """Streams the surely-content prefix, holds the rest, decides in ``finish()``."""

    family: ClassVar[JsonFamily]
    # vLLM routes tool_choice="required"/named through this parser (as "auto") when False.
    supports_required_and_named: ClassVar[bool] = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._buf = ""
        self._holding = self.family.stream_before is None

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        self._buf += text
        if self._holding:
            return Delta()
        marker = self.family.stream_before
        pos = self._buf.find(marker)
        if pos != -1:
            self._holding = True
        else:
            pos = len(self._buf) - partial_suffix(self._buf, (marker,))
        out, self._buf = self._buf[:pos], self._buf[pos:]
        return Delta(content=out)

    def finish(self) -> Delta:
        text, self._buf = self._buf, ""
        if not text:
            return Delta()
        result = self.decide(text)
        return Delta(
            content=result.content or "",
            tool_calls=[
                ToolCallDelta(index=i, name=name, arguments=args, id=self.call_id(i))
                for i, (name, args) in enumerate(result.calls)
            ],
        )

    def decide(self, text: str) -> Extraction:
        return self.family.extract(text, self.ctx)

    def call_id(self, index: int) -> str | None:
        return None

    def snapshot(self) -> Any:
        return [self._buf, self._holding]

    def restore(self, snap: Any) -> None:
        if (
            not isinstance(snap, list)
            or len(snap) != 2
            or not isinstance(snap[0], str)
            or not isinstance(snap[1], bool)
        ):
            raise ValueError("bad json tool parser state")
        self._buf, self._holding = snap


FAMILIES: dict[str, JsonFamily] = {
    f.name: f
    for f in (
        JsonFamily("hermes", extract_tagged("<tool_call>", "</tool_call>"), "<tool_call>"),
        JsonFamily(
            "longcat",
            extract_tagged("<longcat_tool_call>", "</longcat_tool_call>"),
            "<longcat_tool_call>",
        ),
        JsonFamily("llama3_json", extract_llama_json),
        JsonFamily("phi4_mini_json", extract_phi4_mini),
    )
}


def family_parser(family: str, *, supports_required_and_named: bool = True) -> type:
    return type(
        f"{family.title().replace('_', '')}ToolParser",
        (HeldCallsParser,),
        {
            "family": FAMILIES[family],
            "name": family,
            "supports_required_and_named": supports_required_and_named,
            "__doc__": f"vLLM's ``{family}`` tool-call format.",
        },
    )


# vLLM's xgrammar structural tags (hermes, longcat, llama) make "required"/named fall back to
# this parser's own extraction.
HermesToolParser = tool_parser("hermes", "qwen3_json", "qwen", "qwen25", "qwen3", family="hermes")(
    family_parser("hermes", supports_required_and_named=False)
)
LongcatToolParser = tool_parser("longcat", family="hermes")(
    family_parser("longcat", supports_required_and_named=False)
)
Llama3JsonToolParser = tool_parser("llama3_json", "llama4_json", "llama", "llama3", family="llama3_json")(
    family_parser("llama3_json", supports_required_and_named=False)
)
Phi4MiniJsonToolParser = tool_parser("phi4_mini_json", "phi4", family="phi4_mini_json")(
    family_parser("phi4_mini_json")
)
