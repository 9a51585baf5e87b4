"""DeepSeek V3 / V3.1 tool calls, written between special-token separators.

    V3:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
    V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>

vLLM reads the whole output: with ``<｜tool▁calls▁begin｜>`` anywhere, every call-shaped span
(anywhere in the text) is a call and its arguments are passed through verbatim; the content
is what precedes the section (V3 adds what follows its last end marker). A V3 call whose type
is not ``function`` turns the whole output back into content. Text before the first marker
is therefore decided at once; from the first marker on it is held until ``finish()``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from tokenbridge.parsers.base import Delta, ParseContext, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.lexer import find_first, partial_suffix
from tokenbridge.parsers.declare import THINK_TOKENS, CallSpelling, RenderRules, ToolCallGrammar

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"

_e = re.escape


@dataclass(frozen=True)
class Format:
    """One DeepSeek call syntax.

    ``call``: a call; groups ``type`` (optional), ``name``, ``args``. ``triggers``: markers
    from which on text cannot be decided before the end. ``keep_tail``: the text after the
    last ``CALLS_END`` is content too.
    """

    call: re.Pattern[str]
    triggers: tuple[str, ...]
    keep_tail: bool


FORMATS: dict[str, Format] = {
    # Type and name are single lines (the name runs to the line end); the arguments sit in
    # a json code fence and may span lines.
    "deepseek_v3": Format(
        re.compile(
            f"{_e(CALL_BEGIN)}(?P<type>.*){_e(SEP)}(?P<name>.*)\\n```json\\n"
            f"(?P<args>[\\s\\S]*?)\\n```{_e(CALL_END)}"
        ),
        (CALLS_BEGIN, CALL_BEGIN, CALLS_END),
        True,
    ),
    "deepseek_v31": Format(
        re.compile(f"{_e(CALL_BEGIN)}(?P<name>.*?){_e(SEP)}(?P<args>[\\s\\S]*?){_e(CALL_END)}"),
        (CALLS_BEGIN, CALL_BEGIN),
        False,
    ),
}


def extract(fmt: Format, text: str) -> tuple[str, list[tuple[str, str]]]:
    """``(content, [(name, arguments)])`` of a complete output, as vLLM computes it."""
    start = text.find(CALLS_BEGIN)
    if start == -1:
        return text, []
    calls = []
    for m in fmt.call.finditer(text):
        if "type" in fmt.call.groupindex and m.group("type") != "function":
            return text, []
        calls.append((m.group("name"), m.group("args")))
    content = text[:start]
    if fmt.keep_tail:
        end = text.rfind(CALLS_END)
        if end != -1:
            content += text[end + len(CALLS_END):]
    return content, calls


class DeepSeekToolParser(ToolParser):
    """Streams content up to the first tool marker, then decides the rest at ``finish()``.

    With the section marker present vLLM reports calls even when none parses, and content
    that is only whitespace is then dropped, so leading whitespace is held until decided.
    vLLM's strict structural tags for these models make required/named choices fall back to
    this parser.
    """

    supports_required_and_named: ClassVar[bool] = False
    format: Format = FORMATS["deepseek_v3"]

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._held = ""
        self._holding = False
        self._blank: str | None = ""  # content so far while it is all whitespace

    def _content(self, text: str) -> str:
        if self._blank is None:
            return text
        self._blank += text
        if not self._blank.strip():
            return ""
        text, self._blank = self._blank, None
        return text

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        self._held += text
        if self._holding:
            return Delta()
        pos, _ = find_first(self._held, self.format.triggers)
        if pos != -1:
            self._holding = True
            out, self._held = self._held[:pos], self._held[pos:]
            return Delta(content=self._content(out))
        cut = len(self._held) - partial_suffix(self._held, self.format.triggers)
        out, self._held = self._held[:cut], self._held[cut:]
        return Delta(content=self._content(out))

    def finish(self) -> Delta:
        text, self._held = self._held, ""
        content, calls = extract(self.format, text)
        blank, self._blank = self._blank, ""
        if blank is not None:
            content = blank + content
            if CALLS_BEGIN in text and not content.strip():
                content = ""
        if not content and CALLS_BEGIN in text:
            # vLLM counts the section marker as "tools called" even when no call survives
            # (none parsed, or unknown names dropped later): its content is then null.
            self.null_content = True
        return Delta(
            content=content,
            tool_calls=[ToolCallDelta(index=i, name=n, arguments=a) for i, (n, a) in enumerate(calls)],
        )

    def snapshot(self) -> Any:
        return [self._held, self._holding, self._blank]

    def restore(self, snap: Any) -> None:
        if (
            not isinstance(snap, list)
            or len(snap) != 3
            or not isinstance(snap[0], str)
            or not isinstance(snap[1], bool)
            or not (snap[2] is None or isinstance(snap[2], str))
        ):
            raise ValueError("bad deepseek tool parser state")
        self._held, self._holding, self._blank = snap


_CALLS_BEGIN, _CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_CALL_BEGIN, _CALL_END, _SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def _grammar(spelling: CallSpelling, separator: str = "") -> ToolCallGrammar:
    """DeepSeek's calls, all inside one calls section."""
    return ToolCallGrammar(
        spellings=(spelling,),
        arguments="json",
        trigger=_CALLS_BEGIN,
        auto_layout="section",
        required_layout="section_tag",
        forced_layout="tag",
        text_excludes=THINK_TOKENS,
        section_begin=_CALLS_BEGIN,
        section_end=_CALLS_END,
        separator=separator,
    )


#: vLLM's structural-tag models ``deepseek_r1`` (V3) and ``deepseek_v3_1``.
RENDER_RULES = {
    "deepseek_v3": RenderRules(
        structural_tag="deepseek_r1",
        grammar=_grammar(
            CallSpelling(_CALL_BEGIN + "function" + _SEP, "\n```json\n", "\n```" + _CALL_END), separator="\n"
        ),
    ),
    "deepseek_v31": RenderRules(structural_tag="deepseek_v3_1", grammar=_grammar(CallSpelling(_CALL_BEGIN, _SEP, _CALL_END))),
}


def _register(name: str, *aliases: str) -> None:
    cls = type(
        f"{name.title().replace('_', '')}ToolParser",
        (DeepSeekToolParser,),
        {"name": name, "format": FORMATS[name], "__doc__": DeepSeekToolParser.__doc__},
    )
    tool_parser(name, *aliases, family="deepseek", render=RENDER_RULES.get(name, RenderRules()))(cls)


# Aliases: SGLang / SMG / Dynamo / TRT-LLM spellings of the same formats (anchors.md §4).
_register("deepseek_v3", "deepseekv3", "deepseek")
_register("deepseek_v31", "deepseekv31", "deepseek31", "deepseek_v3_1", "deepseekv3.1")
