"""Tool calls written as a marker plus a JSON body (hermes ``<tool_call>{…}</tool_call>``,
Llama ``{"name": …, "parameters": …}``, Phi-4-mini ``functools[…]``, Granite 4, Jamba,
InternLM, Hunyuan-A13B, ERNIE 4.5, xLAM, GigaChat 3, Apertus, …).

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
from typing import Any, Callable

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, random_uuid
from tokenbridge.parsers.engine.json import complete_truncated_json
from tokenbridge.parsers.declare import CallSpelling, RenderRules, hermes_style, triggered_calls
from tokenbridge.parsers.engine.held import held_calls_parser
from tokenbridge.parsers.engine.json_calls import StreamedBareJsonCalls, StreamedJsonCalls
from tokenbridge.parsers.engine.json import call_from_object, name_of


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


def _dict_or_raw_args(value: Any) -> str:
    """xLAM/Hunyuan: a dict is re-serialized, a string kept verbatim, anything else invalid."""
    if isinstance(value, dict):
        return dumps_args(value)
    if isinstance(value, str):
        return value
    raise TypeError("arguments are neither an object nor a string")


def _named_calls(data: list) -> list[tuple[str, str]]:
    """The entries with both ``name`` and ``arguments`` (others skipped); bad arguments raise."""
    return [
        (name_of(c), _dict_or_raw_args(c["arguments"]))
        for c in data
        if isinstance(c, dict) and "name" in c and "arguments" in c
    ]


JAMBA_START, JAMBA_END = "<tool_calls>", "</tool_calls>"
_JAMBA_BLOCK = re.compile(f"{JAMBA_START}(.*?){JAMBA_END}", re.S)


def extract_jamba(text: str, ctx: ParseContext) -> Extraction:
    """Jamba ``<tool_calls>[{"name", "arguments"}, …]</tool_calls>``: only the first closed
    block counts; an unclosed block or any malformed entry makes it all content."""
    if JAMBA_START not in text:
        return as_content(text)
    m = _JAMBA_BLOCK.search(text)
    try:
        if m is None:
            raise ValueError("no closed tool call block")
        calls = [(name_of(c), dumps_args(c["arguments"])) for c in json.loads(m.group(1))]
    except Exception:
        return as_content(text)
    content = text[: text.find(JAMBA_START)]
    return Extraction(content if content not in ("", " ") else None, calls)


INTERNLM_BOT = "<|action_start|><|plugin|>"
INTERNLM_EOT = "<|action_end|>"


def extract_internlm(text: str, ctx: ParseContext) -> Extraction:
    """InternLM2 ``<|action_start|><|plugin|>{…}<|action_end|>``: one call, parsed from the
    first ``{`` to the end marker; ``parameters`` wins over ``arguments``.

    vLLM lets errors here escape (a second marker, invalid JSON, a missing name fail the
    request); the closest non-failing answer is to keep the text as content.
    """
    if INTERNLM_BOT not in text:
        return as_content(text)
    before, *actions = text.split(INTERNLM_BOT)
    try:
        if len(actions) != 1:
            raise ValueError("more than one action")
        action = actions[0].split(INTERNLM_EOT)[0]
        obj = json.loads(action[action.find("{") :])
        if not isinstance(obj, dict):
            raise TypeError("action is not an object")
        args = obj.get("parameters", obj.get("arguments", {}))
        calls = [(name_of(obj), dumps_args(args))]
    except Exception:
        return as_content(text)
    return Extraction(before or None, calls)


HUNYUAN_START = "<tool_calls>"
_HUNYUAN_BLOCK = re.compile(r"<tool_calls>([\s\S]*?)</tool_calls>")
_THINK_REGION = re.compile(r"<think>(.*?)</think>", re.S)


def extract_hunyuan_a13b(text: str, ctx: ParseContext) -> Extraction:
    """Hunyuan-A13B ``<tool_calls>[…]</tool_calls>``: the first closed block outside a
    ``<think>`` region whose body is valid JSON; its entries with both ``name`` and
    ``arguments`` are calls (others skipped). Content is the text before that block."""
    think = [m.span() for m in _THINK_REGION.finditer(text)]
    for m in _HUNYUAN_BLOCK.finditer(text):
        start, end = m.span()
        if any(start > a and end < b for a, b in think):
            continue
        try:
            data = json.loads(m.group(1).strip())
        except Exception:
            continue
        if not isinstance(data, list):
            return as_content(text)
        try:
            calls = _named_calls(data)
        except Exception:
            return as_content(text)
        if not calls:
            return as_content(text)
        content = text[:start]
        return Extraction(content if content.strip() else None, calls)
    return as_content(text)


ERNIE_START = "<tool_call>"
_ERNIE_CALL = re.compile(r"<tool_call>\s*(?P<json>\{.*?\})\s*</tool_call>", re.S)


def extract_ernie45(text: str, ctx: ParseContext) -> Extraction:
    """ERNIE 4.5 ``<tool_call>{…}</tool_call>``: every closed ``{…}`` call must parse (a missing
    name is ``""``, missing arguments ``{}``), else all is content. Once a start marker
    exists, content is the text before it minus trailing newlines — even with no closed call."""
    if ERNIE_START not in text:
        return as_content(text)
    try:
        calls = []
        for body in _ERNIE_CALL.findall(text):
            obj = json.loads(body)
            calls.append((name_of(obj) if "name" in obj else "", dumps_args(obj.get("arguments", {}))))
    except Exception:
        return as_content(text)
    return Extraction(text[: text.find(ERNIE_START)].rstrip("\n") or None, calls)


_XLAM_BLOCKS = (
    re.compile(r"```(?:json)?\s*([\s\S]*?)```"),
    re.compile(r"\[TOOL_CALLS\]([\s\S]*?)(?=\n|$)"),
    re.compile(r"<tool_call>([\s\S]*?)</tool_call>"),
)
_XLAM_AFTER_THINK = re.compile(r"</think>([\s\S]*)")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _xlam_split(text: str) -> tuple[str | None, str | None]:
    """``(content, calls JSON)`` the way xLAM locates its call array."""
    m = _XLAM_AFTER_THINK.search(text)
    if m:
        head = text[: m.start() + len("</think>")].strip()
        tail = m.group(1).strip()
        if _is_json(tail):
            return head, tail
        for pattern in _XLAM_BLOCKS:
            found = next((b for b in pattern.findall(tail) if _is_json(b)), None)
            if found is not None:
                return head, found
    for pattern in _XLAM_BLOCKS:
        blocks = pattern.findall(text)
        found = next((b for b in blocks if _is_json(b)), None)
        if found is not None:
            return pattern.sub("", text).strip(), found
    if text.strip().startswith("["):
        if _is_json(text) or ("{" in text and "name" in text and "arguments" in text):
            return None, text
    return text, None


def extract_xlam(text: str, ctx: ParseContext) -> Extraction:
    """xLAM: a JSON array of ``{"name", "arguments"}`` found after ``</think>``, in a code
    fence, after ``[TOOL_CALLS]``, inside ``<tool_call>`` or as the whole output; entries
    without both keys are skipped. Content is the text with the located block removed."""
    try:
        content, raw = _xlam_split(text)
        if not raw:
            return as_content(text)
        data = json.loads(raw)
        if not isinstance(data, list):
            return as_content(text)
        calls = _named_calls(data)
    except Exception:
        return as_content(text)
    return Extraction(content, calls) if calls else as_content(text)


GIGACHAT_MARKERS = ("<|message_sep|>", "<|function_call|>", "function call<|role_sep|>\n")
_GIGACHAT_CALL = re.compile(r"(?:function call<\|role_sep\|>\n|<\|function_call\|>)(.*)", re.S)
_GIGACHAT_CONTENT = re.compile(r"^(.*?)(?:<\|message_sep\|>|<\|function_call\|>)", re.S)


def extract_gigachat3(text: str, ctx: ParseContext) -> Extraction:
    """GigaChat 3: after ``function call<|role_sep|>\\n`` (or ``<|function_call|>``) the rest of
    the output (minus a final ``</s>``) is one ``{"name", "arguments": {…}}`` object. Content
    is the text before the first ``<|message_sep|>``/``<|function_call|>``.

    A non-string name fails the request in vLLM; it is kept as content here.
    """
    body = text[: text.rfind("</s>")] if text.rstrip().endswith("</s>") else text
    m = _GIGACHAT_CALL.search(body)
    if m is None:
        return as_content(text)
    try:
        obj = json.loads(m.group(1), strict=False)
    except json.JSONDecodeError:
        return as_content(text)
    if not (isinstance(obj, dict) and "name" in obj and isinstance(obj.get("arguments"), dict)):
        return as_content(text)
    if not isinstance(obj["name"], str):
        return as_content(text)
    c = _GIGACHAT_CONTENT.search(body)
    content = c.group(1) if c else body
    return Extraction(content or None, [(obj["name"], dumps_args(obj["arguments"]))])


APERTUS_PREFIX, APERTUS_SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
_APERTUS_BLOCK = re.compile(f"{re.escape(APERTUS_PREFIX)}(.*?)(?:{re.escape(APERTUS_SUFFIX)}|$)", re.S)


def extract_apertus(text: str, ctx: ParseContext) -> Extraction:
    """Apertus ``<|tools_prefix|>[{"fn": {args}}, …]<|tools_suffix|>``: each non-empty object's
    first member is a call. A truncated array is completed (length cut); text after the JSON
    and after the suffix joins the stripped leading content with newlines."""
    m = _APERTUS_BLOCK.search(text)
    if m is None:
        return as_content(text)
    group = m.group(1)
    stripped = group.lstrip()
    try:
        try:
            parsed, end = _DECODER.raw_decode(stripped)
            trailing = stripped[end:]
        except json.JSONDecodeError:
            parsed, trailing = complete_truncated_json(group), ""
        entries = parsed if isinstance(parsed, list) else [parsed] if parsed else []
        calls = [
            (next(iter(e)), dumps_args(next(iter(e.values()))))
            for e in entries
            if isinstance(e, dict) and e
        ]
    except Exception:
        return as_content(text)
    content = text[: m.start()].strip()
    for extra in (trailing.replace(APERTUS_SUFFIX, "") if trailing.strip() else "",
                  text[m.end() :].replace(APERTUS_SUFFIX, "")):
        if extra.strip():
            content = (content + "\n" + extra.strip()).strip()
    return Extraction(content or None, calls)


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
        JsonFamily("jamba", extract_jamba, JAMBA_START),
        JsonFamily("internlm", extract_internlm, INTERNLM_BOT),
        JsonFamily(
            "hunyuan_a13b",
            extract_hunyuan_a13b,
            (HUNYUAN_START, "<think>"),
            call_id=lambda index: f"call_{random_uuid()}",
        ),
        JsonFamily("ernie45", extract_ernie45, ERNIE_START, hold_trailing="\n"),
        JsonFamily("xlam", extract_xlam, call_id=lambda index: f"call_{index}_{random_uuid()}"),
        JsonFamily("gigachat3", extract_gigachat3, GIGACHAT_MARKERS),
        JsonFamily("apertus", extract_apertus),
    )
}


# vLLM's xgrammar structural tags (hermes, longcat, llama) make "required"/named fall back to
# this parser's own extraction.
HermesToolParser = tool_parser(
    "hermes", "qwen3_json", "qwen", "qwen25", "qwen3", family="hermes",
    render=RenderRules("with_tools", "hermes", grammar=hermes_style("<tool_call>", "</tool_call>")),
)(
    held_calls_parser(FAMILIES["hermes"], supports_required_and_named=False)
)
LongcatToolParser = tool_parser("longcat", family="hermes")(
    held_calls_parser(FAMILIES["longcat"], supports_required_and_named=False)
)
Llama3JsonToolParser = tool_parser(
    "llama3_json", "llama4_json", "llama", "llama3", family="llama3_json",
    render=RenderRules(
        structural_tag="llama",
        grammar=triggered_calls(CallSpelling('{"name": "', '", "parameters": ', "}"), '{"name": ', "json"),
    ),
)(
    held_calls_parser(FAMILIES["llama3_json"], supports_required_and_named=False)
)


def streamed_calls(family: str, start: str, end: str) -> type:
    """The incremental parser of a ``<start>{"name", "arguments"}<end>`` family."""
    return type(
        f"{family.title()}StreamedCalls",
        (StreamedJsonCalls,),
        {"name": family, "start": start, "end": end, "__doc__": f"``{family}`` calls streamed as written."},
    )


HermesToolParser.incremental = streamed_calls("hermes", "<tool_call>", "</tool_call>")
LongcatToolParser.incremental = streamed_calls("longcat", "<longcat_tool_call>", "</longcat_tool_call>")
Llama3JsonToolParser.incremental = type("Llama3JsonStreamedCalls", (StreamedBareJsonCalls,), {"name": "llama3_json"})

Phi4MiniJsonToolParser = tool_parser("phi4_mini_json", "phi4", family="phi4_mini_json")(
    held_calls_parser(FAMILIES["phi4_mini_json"])
)

# The rest follow vLLM's defaults: "required"/named are forced into JSON by guided decoding.
# jamba and internlm keep special tokens when tools are active.
_KEEPS_SPECIAL_WITH_TOOLS = RenderRules("with_tools")
for _name, *_aliases in (
    ("jamba",),
    ("internlm", "interns1"),
    ("hunyuan_a13b",),
    ("ernie45",),
    ("xlam",),
    ("gigachat3",),
    ("apertus", "apertus2509"),
):
    _rules = _KEEPS_SPECIAL_WITH_TOOLS if _name in ("jamba", "internlm") else RenderRules()
    tool_parser(_name, *_aliases, family=_name, render=_rules)(held_calls_parser(FAMILIES[_name]))
