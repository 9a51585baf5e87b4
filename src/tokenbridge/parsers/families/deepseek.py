"""DeepSeek V3 / V3.1: tool calls written between special-token separators, and the R1 and
V3 reasoning rows (Holo2's too: vLLM's DeepSeek-V3 switch with thinking on by default).

    V3:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
    V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>

vLLM reads the whole output: with ``<｜tool▁calls▁begin｜>`` anywhere, every call-shaped span
(anywhere in the text) is a call and its arguments are passed through verbatim; the content
is what precedes the section (V3 adds what follows its last end marker). A V3 call whose type
is not ``function`` turns the whole output back into content. Text before the first marker
is therefore decided at once; from the first marker on it is held until ``finish()``.

Reasoning: R1 splits at ``<think>``/``</think>``; V3.x uses R1's split when ``thinking`` or
``enable_thinking`` is on, else everything is content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.engine.reasoning import R1, MarkerPartitionParser, SwitchedReasoningParser, register_format
from tokenbridge.parsers.engine.thinking import EITHER_FLAG_DEFAULT_OFF, EITHER_FLAG_DEFAULT_ON
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


class DeepSeekState(ParserState):
    _held: str
    _holding: bool  # a calls section began: held to the end
    _blank: str | None  # leading content while it is all whitespace

class DeepSeekToolParser(ToolParser):
    """Streams content up to the first tool marker, then decides the rest at ``finish()``.

    With the section marker present vLLM reports calls even when none parses, and content
    that is only whitespace is then dropped, so leading whitespace is held until decided.
    vLLM's strict structural tags for these models make required/named choices fall back to
    this parser.
    """

    State = DeepSeekState

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

CONTENT, SECTION, HEADER, ARGS, TAIL, BROKEN = range(6)


class StreamedDeepSeekState(ParserState):
    _mode: Literal[0, 1, 2, 3, 4, 5]
    _buf: str
    _index: int
    _blank: str | None
    _section: bool

class StreamedDeepSeekCalls(ToolParser):
    """``--tool-call-streaming incremental``: a call opens when its header (V3: ``function``,
    the name and the code fence; V3.1: the name) is complete, then its arguments stream verbatim,
    holding back only a possible end marker.

    As in the one-shot answer, content is what precedes the section (V3: and follows its last
    end marker), and a call whose header does not parse is dropped. The documented answer
    where streaming cannot match it: a V3 call whose type is not ``function`` turns the rest of
    the output (from that call) into content; a marker out of place (a call before the section,
    a call after its end) does too; a call cut short stands as sent.
    """

    State = StreamedDeepSeekState

    supports_required_and_named: ClassVar[bool] = False
    streams_arguments = True
    format: Format

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._mode = CONTENT
        self._buf = ""  # a possible partial marker, the header being read, or V3's tail
        self._index = 0
        self._blank: str | None = ""  # content so far while it is all whitespace
        self._section = False

    @property
    def _typed(self) -> bool:
        return self.format.keep_tail  # V3: type, separator, name and a code fence

    def _args_end(self) -> str:
        return "\n```" + CALL_END if self._typed else CALL_END

    def _content(self, text: str, out: list[str]) -> None:
        if self._blank is not None:
            self._blank += text
            if not self._blank.strip():
                return
            text, self._blank = self._blank, None
        out.append(text)

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        return self._run(self._buf + text, False)

    def finish(self) -> Delta:
        d = self._run(self._buf, True)
        content = [d.content]
        if self._mode == TAIL:
            self._content(self._buf, content)
        self._buf = ""
        if self._blank is not None:  # nothing but whitespace came out
            blank, self._blank = self._blank, None
            if self._section:
                self.null_content = True  # vLLM counts the section as "tools called"
            else:
                content.append(blank)
        d.content = "".join(content)
        return d

    def _run(self, buf: str, final: bool) -> Delta:
        self._buf = ""
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        while buf:
            mode = self._mode
            if mode == BROKEN:
                self._content(buf, content)
                break
            if mode == HEADER:
                buf = self._header(buf, final, calls)
                if buf is None:
                    break
                continue
            if mode == ARGS:
                end = self._args_end()
                pos = buf.find(end)
                cut = pos if pos != -1 else len(buf) - partial_suffix(buf, (end,))
                if cut:
                    calls.append(ToolCallDelta(self._index, arguments=buf[:cut]))
                if pos == -1:
                    self._buf = "" if final else buf[cut:]  # at a cut, held bytes are dropped
                    break
                self._mode, self._index, buf = SECTION, self._index + 1, buf[pos + len(end):]
                continue
            markers = (CALLS_BEGIN, CALL_BEGIN, CALLS_END) if mode in (CONTENT, TAIL) else (CALL_BEGIN, CALLS_END)
            pos, marker = find_first(buf, markers)
            if pos == -1:
                keep = 0 if final else partial_suffix(buf, markers)
                piece, self._buf = buf[: len(buf) - keep], buf[len(buf) - keep:]
                if mode == CONTENT:
                    self._content(piece, content)
                elif mode == TAIL:
                    self._buf = piece + self._buf
                break
            piece, buf = buf[:pos], buf[pos + len(marker):]
            if mode == CONTENT and marker == CALLS_BEGIN:
                self._content(piece, content)
                self._mode, self._section = SECTION, True
            elif mode == SECTION and marker == CALL_BEGIN:
                self._mode = HEADER
            elif mode in (SECTION, TAIL) and marker == CALLS_END and self._typed:
                self._mode = TAIL  # V3: what follows the last end marker is content
            elif mode == SECTION and marker == CALLS_END:
                pass
            else:  # a marker out of place: the rest is content
                self._content(piece, content)
                self._mode, buf = BROKEN, marker + buf
        return Delta(content="".join(content), tool_calls=calls)

    def _header(self, buf: str, final: bool, calls: list[ToolCallDelta]) -> str | None:
        """Reads a call's header; returns the text after it (None: wait for more)."""
        if self._typed:
            fence = "\n```json\n"
            nl = buf.find("\n")
            if nl == -1 or len(buf) - nl < len(fence) and fence.startswith(buf[nl:]):
                if final:
                    self._mode = SECTION  # cut short: the call is dropped
                    return ""
                self._buf = buf
                return None
            line, rest = buf[:nl], buf[nl:]
            if not rest.startswith(fence) or SEP not in line:
                self._mode = SECTION  # not a call: the one-shot answer skips it
                return buf
            kind, name = line.rsplit(SEP, 1)
            if kind != "function":
                self._mode = BROKEN  # vLLM: the whole output is content
                return CALL_BEGIN + buf
            rest = rest[len(fence):]
        else:
            pos = buf.find(SEP)
            nl = buf.find("\n")
            if pos == -1 or (nl != -1 and nl < pos):
                if nl != -1 or final:
                    self._mode = SECTION
                    return buf if nl != -1 else ""
                self._buf = buf
                return None
            name, rest = buf[:pos], buf[pos + len(SEP):]
        calls.append(ToolCallDelta(self._index, name=name))
        self._mode = ARGS
        return rest

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
    title = name.title().replace("_", "")
    streamed = type(f"{title}StreamedCalls", (StreamedDeepSeekCalls,),
                    {"name": name, "format": FORMATS[name], "__doc__": StreamedDeepSeekCalls.__doc__})
    cls = type(
        f"{title}ToolParser",
        (DeepSeekToolParser,),
        {"name": name, "format": FORMATS[name], "incremental": streamed, "__doc__": DeepSeekToolParser.__doc__},
    )
    tool_parser(name, *aliases, family="deepseek", render=RENDER_RULES.get(name, RenderRules()))(cls)


# Aliases: SGLang / SMG / Dynamo / TRT-LLM spellings of the same formats (anchors.md §4).
_register("deepseek_v3", "deepseekv3", "deepseek")
_register("deepseek_v31", "deepseekv31", "deepseek31", "deepseek_v3_1", "deepseekv3.1")


DeepSeekR1ReasoningParser = register_format(
    MarkerPartitionParser, R1, "deepseek_r1", "step5", "deepseek-r1", family="deepseek_r1"
)


@reasoning_parser("deepseek_v3", "deepseek_v31", "deepseek-v3", "deepseek_v3_1", family="deepseek_v3")
class DeepSeekV3ReasoningParser(SwitchedReasoningParser):
    """DeepSeek-V3.1/V3.2: ``thinking``/``enable_thinking`` on -> R1 rules, else all content."""

    name = "deepseek_v3"
    thinking = EITHER_FLAG_DEFAULT_OFF
    thinking_parser = DeepSeekR1ReasoningParser


@reasoning_parser("holo2", family="deepseek_v3")
class Holo2ReasoningParser(DeepSeekV3ReasoningParser):
    """Holo2: the DeepSeek-V3 switch with thinking on by default."""

    name = "holo2"
    thinking = EITHER_FLAG_DEFAULT_ON
