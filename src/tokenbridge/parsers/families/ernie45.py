"""ERNIE 4.5: ``<tool_call>{…}</tool_call>`` JSON tool calls, and R1-style reasoning whose
content is narrowed to ``<response>…</response>`` (decided on the whole output).
"""

from __future__ import annotations

import json
import re
from tokenbridge.parsers.base import Delta, ParseContext, merge_deltas
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, WholeTextParser, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import dumps_args, name_of
from tokenbridge.parsers.engine.json_calls import CONTENT, CallObject, JsonCallsState, StreamedJsonCalls
from tokenbridge.parsers.engine.lexer import partial_suffix
from tokenbridge.parsers.engine.reasoning import closed_in_prompt
from tokenbridge.parsers.registry import reasoning_parser, tool_parser


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


Ernie45ToolParser = tool_parser("ernie45", family="ernie45")(
    held_calls_parser(JsonFamily("ernie45", extract_ernie45, ERNIE_START, hold_trailing="\n"))
)


class Ernie45StreamedState(JsonCallsState):
    newlines: str = ""  # newlines (and a partial start marker) at the end of the content so far


class Ernie45StreamedCalls(StreamedJsonCalls):
    """``ernie45`` for ``--tool-call-streaming incremental``: hermes' reading (arguments ``{}``
    when missing), with the newlines right before the first start marker held back (the
    one-shot content drops them). A call without its end marker, or without a name, is read
    as hermes reads it (the one-shot answer skips the first and names the second ``""``)."""

    name = "ernie45"
    start, end = ERNIE_START, "</tool_call>"
    State = Ernie45StreamedState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.newlines = ""

    def _new_call(self) -> CallObject:
        return CallObject(self.ensure_ascii, self.args_keys, missing_args="{}")

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if self.mode != CONTENT:
            return super().feed(text, token_ids)
        buf, self.newlines = self.newlines + text, ""
        at = buf.find(self.start)
        if at >= 0:
            return super().feed(buf[:at].rstrip("\n") + buf[at:], token_ids)
        body = buf[: len(buf) - partial_suffix(buf, (self.start,))].rstrip("\n")
        self.newlines = buf[len(body):]
        return super().feed(body, token_ids)

    def finish(self) -> Delta:
        newlines, self.newlines = self.newlines, ""
        return merge_deltas(super().feed(newlines, []), super().finish())


Ernie45ToolParser.incremental = Ernie45StreamedCalls


@reasoning_parser("ernie45", family="ernie45")
class Ernie45ReasoningParser(WholeTextParser):
    """Ernie-4.5: R1 rules, then the content is narrowed to ``<response>…</response>``."""

    name = "ernie45"

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        return closed_in_prompt(prompt_token_ids, ctx.vocab, ("<think>",), ("</think>",))

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
