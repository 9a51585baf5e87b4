"""InternLM2 / Intern-S1 JSON tool calls: ``<|action_start|><|plugin|>{…}<|action_end|>``.
"""

from __future__ import annotations

import json

from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.declare import RenderRules
from tokenbridge.parsers.engine.held import Extraction, JsonFamily, as_content, held_calls_parser
from tokenbridge.parsers.engine.json import dumps_args, name_of
from tokenbridge.parsers.engine.json_calls import CallObject, StreamedJsonCalls
from tokenbridge.parsers.registry import tool_parser


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


# vLLM keeps special tokens when tools are active.
InternlmToolParser = tool_parser("internlm", "interns1", family="internlm", render=RenderRules("with_tools"))(
    held_calls_parser(JsonFamily("internlm", extract_internlm, INTERNLM_BOT))
)


class InternlmStreamedCalls(StreamedJsonCalls):
    """``internlm`` for ``--tool-call-streaming incremental``: hermes' reading between the action
    markers; the arguments are ``parameters`` or ``arguments`` (whichever is written first; the
    one-shot answer prefers ``parameters`` when both are), ``{}`` when neither is."""

    name = "internlm"
    start, end = INTERNLM_BOT, INTERNLM_EOT
    args_keys = ("parameters", "arguments")

    def _new_call(self) -> CallObject:
        return CallObject(self.ensure_ascii, self.args_keys, missing_args="{}")


InternlmToolParser.incremental = InternlmStreamedCalls
