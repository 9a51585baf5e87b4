"""gpt-oss Harmony output: channels, ``to=functions.x`` recipients, read from token ids.

vLLM 0.33 does not split Harmony output by text markers. It feeds the output *token ids*
(all of them, the stop token included) to ``openai_harmony.StreamableParser`` and maps each
completed assistant message by channel and recipient:

* recipient ``functions.x`` (or any non built-in recipient): a tool call ``x`` whose arguments
  are ``json.dumps(json.loads(text))`` (``ensure_ascii`` on), or the raw text when it is not
  JSON or the content type is not JSON. Unknown function names are kept;
* channel ``analysis``: reasoning (only when a reasoning parser is configured);
* channel ``final``, or ``commentary`` without recipient: content;
* anything else (other roles, other channels): dropped.

Non-empty reasoning parts are joined with ``"\n"``, and so are content parts. A message cut
off in its content is completed at the end of the output; one cut off in its header makes the
whole unfinished message (header tokens included) content, decoded as text.

:class:`HarmonyStream` is that reading, one token at a time. It keeps a mirror of the
parser's state (expecting ``<|start|>``, in a header, in content) so that its snapshot is
only what rebuilds the parser: the current header and an undecodable UTF-8 tail, never the
message text already emitted. A tool call's text is held until its message completes.

gpt-oss reasoning: the Harmony ``analysis`` channel, read from token ids.

The content it returns is the ``final`` (and recipient-less ``commentary``) channel, which is
the whole answer when no tool parser runs (e.g. ``tool_choice: "none"``): tool-call messages
are never content. When the ``openai`` tool parser runs too, it reads the same ids itself.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ReasoningParser, Stateful, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.json_stream import JsonStream, JsonStreamState
from tokenbridge.parsers.registry import reasoning_parser, tool_parser
from tokenbridge.parsers.declare import RenderRules


EXPECT_START, HEADER, CONTENT = 0, 1, 2
IGNORE, REASONING, TEXT, TOOL = 0, 1, 2, 3

BUILTIN_RECIPIENTS = frozenset({"python", "browser", "container"})
def normalize_recipient(recipient: str | None) -> str | None:
    """Drop a ``<|constrain|>…`` suffix that older Harmony versions left in the recipient."""
    if recipient is None:
        return None
    cut = recipient.find("<|constrain|>")
    if cut == -1:
        return recipient
    return recipient[:cut].rstrip() or None


def is_function_recipient(recipient: str | None) -> bool:
    if not recipient or recipient.startswith("<|") or recipient == "assistant":
        return False
    if recipient.startswith("functions."):
        return len(recipient) > len("functions.")
    return recipient.split(".", 1)[0] not in BUILTIN_RECIPIENTS


def tool_arguments(text: str, content_type: str | None) -> str:
    if content_type is not None and "json" not in content_type:
        return text
    try:
        return json.dumps(json.loads(text))
    except (ValueError, RecursionError):
        return text


TokenIds = list[Annotated[int, msgspec.Meta(ge=0, lt=1 << 32)]]


class HarmonyArgsState(ParserState):
    stream: JsonStreamState  # the open call's arguments, read as JSON
    broken: str | None  # their raw text from the byte that broke JSON


class HarmonyState(ParserState):
    mode: Annotated[int, msgspec.Meta(ge=EXPECT_START, le=CONTENT)]
    replay_assistant: bool
    replay: TokenIds
    unfinished: TokenIds
    undecoded: TokenIds
    kind: Annotated[int, msgspec.Meta(ge=IGNORE, le=TOOL)]
    tool_name: str
    content_type: str | None
    tool_text: str
    part_open: bool
    reasoning_any: bool
    content_any: bool
    tool_index: Annotated[int, msgspec.Meta(ge=0)]
    args: HarmonyArgsState | None  # incremental mode only


class HarmonyStream(Stateful):
    """Incremental Harmony reader producing reasoning, content and whole tool calls.

    ``openai_harmony`` decides the structure (message boundaries, headers); the message text
    is decoded here from the content tokens, as the parser's completed message has it: valid
    UTF-8 as soon as it is complete, an undecodable tail lossily at the message's end.
    """

    State = HarmonyState

    def __init__(self, want_reasoning: bool, want_tools: bool, vocab: Any, encoding: Any, incremental: bool = False) -> None:
        self.want_reasoning = want_reasoning
        self.want_tools = want_tools
        self.vocab = vocab
        self._encoding = encoding
        # Calls open at their header and their arguments stream re-serialized (json content)
        # or verbatim, instead of whole at the message's end; ``args`` reads the JSON.
        self.incremental = incremental
        self.args: JsonStream | None = None
        self.mode = HEADER
        self.replay: list[int] = []  # feeding these to a fresh parser restores its state
        self.replay_assistant = True  # ... one built with the assistant role (no message done)
        self.unfinished: list[int] = []  # vLLM's tokens of the unfinished message (fallback)
        self.undecoded: list[int] = []  # content tokens not yet valid UTF-8
        self.kind = IGNORE
        self.tool_name = ""
        self.content_type: str | None = None
        self.tool_text = ""
        self.part_open = False
        self.reasoning_any = False
        self.content_any = False
        self.tool_index = 0
        self._parser = None

    @property
    def encoding(self):
        if self._encoding is None:
            raise RuntimeError("the Harmony parsers read ParseContext.harmony (model.harmony.harmony_encoding)")
        return self._encoding

    @property
    def parser(self):
        if self._parser is None:
            from openai_harmony import HarmonyError, Role, StreamableParser

            role = Role.ASSISTANT if self.replay_assistant else None
            self._parser = StreamableParser(self.encoding, role=role)
            for t in self.replay:
                try:
                    self._parser.process(t)
                except HarmonyError:
                    pass
        return self._parser

    # reading ------------------------------------------------------------------------------

    def feed(self, token_ids: list[int]) -> tuple[str, str, list[ToolCallDelta]]:
        from openai_harmony import HarmonyError, StreamState

        reasoning: list[str] = []
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        if not token_ids:
            return "", "", calls
        parser = self.parser
        enc = self.encoding
        modes = {
            StreamState.EXPECT_START: EXPECT_START,
            StreamState.HEADER: HEADER,
            StreamState.CONTENT: CONTENT,
        }
        for t in token_ids:
            try:
                parser.process(t)
                ok = True
            except HarmonyError:
                ok = False
            old = self.mode
            # Only a special token or an error can move the parser to another state.
            new = modes[parser.state] if not ok or enc.is_special_token(t) else old
            self.mode = new
            if old == CONTENT:
                if new == CONTENT:
                    self.undecoded.append(t)
                    self._decode(reasoning, content, final=False, calls=calls)
                else:
                    self._complete(reasoning, content, calls)
            elif new == CONTENT:
                self.replay.append(t)
                self._open(parser)
                if self.incremental and self.kind == TOOL:
                    calls.append(ToolCallDelta(index=self.tool_index, name=self.tool_name))
                    if self.content_type is None or "json" in self.content_type:
                        self.args = JsonStream(ensure_ascii=True)
            else:
                if self.replay_assistant:
                    self.replay.append(t)
                elif new == HEADER:
                    self.replay = [*self.replay, t] if old == HEADER else [t]
                else:
                    self.replay = []
                if ok:
                    self.unfinished.append(t)
        return "".join(reasoning), "".join(content), calls

    def finish(self) -> tuple[str, str, list[ToolCallDelta]]:
        """The end of the output: complete an open message, or fall back to content."""
        reasoning: list[str] = []
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        if self.mode == CONTENT:
            self._complete(reasoning, content, calls)
        elif self.mode == HEADER:
            text = self.encoding.decode(self.unfinished) if self.unfinished else ""
            self.kind = TEXT
            self._emit(text, reasoning, content, calls)
            self.kind = IGNORE
        self.mode = EXPECT_START
        self.replay = []
        self.unfinished = []
        return "".join(reasoning), "".join(content), calls

    def _open(self, parser) -> None:
        """A header parsed: classify the message the way vLLM maps completed messages."""
        from openai_harmony import Role

        self.unfinished = []
        recipient = normalize_recipient(parser.current_recipient)
        channel = parser.current_channel
        if parser.current_role != Role.ASSISTANT:
            kind = IGNORE
        elif is_function_recipient(recipient):
            kind = TOOL if self.want_tools else IGNORE
        elif channel == "analysis":
            kind = REASONING if self.want_reasoning else IGNORE
        elif channel == "final" or (channel == "commentary" and recipient is None):
            kind = TEXT
        else:
            kind = IGNORE
        self.kind = kind
        self.part_open = False
        self.tool_text = ""
        self.tool_name = recipient.removeprefix("functions.") if kind == TOOL else ""
        self.content_type = parser.current_content_type if kind == TOOL else None

    def _decode(self, reasoning: list[str], content: list[str], final: bool, calls: list[ToolCallDelta]) -> None:
        if not self.undecoded:
            return
        if self.kind == IGNORE:
            self.undecoded = []
            return
        try:
            text = self.encoding.decode_utf8(self.undecoded)
        except Exception:
            if not final:
                return
            text = self.encoding.decode(self.undecoded)
        self.undecoded = []
        self._emit(text, reasoning, content, calls)

    def _emit(self, text: str, reasoning: list[str], content: list[str], calls: list[ToolCallDelta]) -> None:
        """Message text out; a message's first non-empty text is joined to earlier ones by a newline."""
        if not text:
            return
        if self.kind == TOOL:
            if self.incremental:
                self._stream_args(text, calls, final=False)
            else:
                self.tool_text += text
            return
        if self.kind == REASONING:
            out, seen = reasoning, self.reasoning_any
            self.reasoning_any = True
        else:
            out, seen = content, self.content_any
            self.content_any = True
        if not self.part_open:
            self.part_open = True
            if seen:
                text = "\n" + text
        out.append(text)

    def _stream_args(self, text: str, calls: list[ToolCallDelta], final: bool) -> None:
        """Arguments as they come: re-serialized while they are JSON (whitespace after the value
        dropped); from a byte that breaks JSON on, verbatim (vLLM keeps text that is not JSON)."""
        args, out = self.args, text
        if args is not None and args.broken is None:
            out, used = args.feed(text)
            if args.broken is not None:
                out += args.broken
            else:
                rest = text[used:].lstrip(" \t\n\r")
                if rest:
                    args.broken = ""
                    out += rest
                elif final:
                    out += args.finish()
                    out += args.broken or ""
        if out:
            calls.append(ToolCallDelta(index=self.tool_index, arguments=out))

    def _complete(self, reasoning: list[str], content: list[str], calls: list[ToolCallDelta]) -> None:
        self._decode(reasoning, content, final=True, calls=calls)
        if self.kind == TOOL and self.incremental:
            self._stream_args("", calls, final=True)
            self.args = None
            self.tool_index += 1
        elif self.kind == TOOL:
            calls.append(
                ToolCallDelta(
                    index=self.tool_index,
                    name=self.tool_name,
                    arguments=tool_arguments(self.tool_text, self.content_type),
                )
            )
            self.tool_index += 1
        self.mode = EXPECT_START
        self.replay = []
        self.replay_assistant = False
        self.unfinished = []
        self.kind = IGNORE
        self.part_open = False
        self.tool_text = ""
        self.tool_name = ""
        self.content_type = None

    # state --------------------------------------------------------------------------------

    def snapshot(self) -> HarmonyState:
        args = None if self.args is None else HarmonyArgsState(self.args.snapshot(), self.args.broken)
        return HarmonyState(
            self.mode, self.replay_assistant, self.replay, self.unfinished, self.undecoded,
            self.kind, self.tool_name, self.content_type, self.tool_text, self.part_open,
            self.reasoning_any, self.content_any, self.tool_index, args)

    def load(self, state: HarmonyState) -> None:
        if state.args is not None and not self.incremental:
            raise ValueError("bad harmony parser state: streamed arguments in whole mode")
        self.mode, self.replay_assistant = state.mode, state.replay_assistant
        self.replay, self.unfinished, self.undecoded = state.replay, state.unfinished, state.undecoded
        self.kind, self.tool_name, self.content_type = state.kind, state.tool_name, state.content_type
        self.tool_text, self.part_open = state.tool_text, state.part_open
        self.reasoning_any, self.content_any = state.reasoning_any, state.content_any
        self.tool_index = state.tool_index
        self.args = None
        if state.args is not None:
            self.args = JsonStream(ensure_ascii=True)
            self.args.load(state.args.stream)
            self.args.broken = state.args.broken
        self._parser = None


@tool_parser("openai", "gpt-oss", "harmony", family="harmony", render=RenderRules(structural_tag="harmony"))
class HarmonyToolParser(ToolParser):
    """gpt-oss tool calls and content from the token ids; the text is not read.

    vLLM reads Harmony calls whatever ``tool_choice`` is (``required``/named included, not
    forced into JSON) and still reads the channels under ``"none"`` (calls dropped).
    """

    supports_required_and_named = False
    engine_based = True
    blank_content_is_null = False
    uses_harmony = True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.stream = HarmonyStream(
            False, True, ctx.vocab, ctx.harmony, incremental=self.streams_arguments
        )
        self.snapshot, self.restore = self.stream.snapshot, self.stream.restore  # its state is the stream's

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        _, content, calls = self.stream.feed(token_ids)
        return Delta(content=content, tool_calls=calls)

    def finish(self) -> Delta:
        _, content, calls = self.stream.finish()
        return Delta(content=content, tool_calls=calls)


class HarmonyStreamedCalls(HarmonyToolParser):
    """gpt-oss calls for ``--tool-call-streaming incremental``: a call opens at its message
    header, then its arguments stream (see ``HarmonyStream._stream_args``)."""

    streams_arguments = True


HarmonyToolParser.incremental = HarmonyStreamedCalls


@reasoning_parser("openai_gptoss", "gpt-oss", "gpt_oss", family="harmony")
class HarmonyReasoningParser(ReasoningParser):
    """The analysis channel of gpt-oss output, read from the token ids."""

    # vLLM's Harmony parser always reads the channels, whatever tool_choice is.
    engine_based = True
    uses_harmony = True

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """vLLM's gpt-oss parser reports reasoning as always ended (render's ``reasoning_ended``)."""
        return True

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.stream = HarmonyStream(True, False, ctx.vocab, ctx.harmony)
        self.snapshot, self.restore = self.stream.snapshot, self.stream.restore  # its state is the stream's

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        reasoning, content, _ = self.stream.feed(token_ids)
        return reasoning, content

    def finish(self) -> tuple[str, str]:
        reasoning, content, _ = self.stream.finish()
        return reasoning, content
