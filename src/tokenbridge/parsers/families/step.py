"""StepFun's Step-3, Step-3.5/3.7 and Step-5.

Step-3.5/3.7 and Step-5 write Qwen3-Coder's XML calls (``families.qwen``); Step-3.5 reasons like
Qwen3 but always thinks, Step-5 like DeepSeek-R1 (its reasoning name is an alias there).

Step-3 tool calls: a ``<｜tool_calls_begin｜>…<｜tool_calls_end｜>`` block of
``<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f"><steptml:parameter
name="k">v</steptml:parameter>…</steptml:invoke><｜tool_call_end｜>`` calls.

vLLM 0.33 (``Step3ToolParser.extract_tool_calls``): only a closed block counts; calls that are
not closed, not of type ``function`` or have no invoke name are skipped; parameter values are
stripped strings cast by the tool schema's plain ``type``. With calls, content is the text
around the block, ``strip()``-ed; with none, the whole text.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from dataclasses import replace

from tokenbridge.parsers.declare import RenderRules
from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, MarkerPartitionParser, register_format
from tokenbridge.parsers.engine.tag_stream import QWEN_PARAMS, streamed_tag_parser
from tokenbridge.parsers.engine.tags import family_parser
from tokenbridge.parsers.engine.thinking import ALWAYS_ON
from tokenbridge.parsers.families.qwen import QWEN3, qwen_coder_family
from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import HeldBlockParser
from tokenbridge.parsers.engine.schema import function_tools
from tokenbridge.parsers.engine.held import Extraction, as_content

CALLS_BEGIN, CALLS_END = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
_INVOKE = re.compile(r'<steptml:invoke name="([^"]+)">')
_PARAM = re.compile(r'<steptml:parameter name="([^"]+)">(.*?)</steptml:parameter>', re.S)


def _cast(value: str, typ: Any) -> Any:
    """One stripped parameter string as the schema's plain ``type`` says (else unchanged)."""
    if typ == "string":
        return value.strip()
    if typ == "integer":
        with contextlib.suppress(ValueError):
            return int(value)
    elif typ == "number":
        with contextlib.suppress(ValueError):
            return float(value)
    elif typ == "boolean":
        low = value.lower()
        return low == "true" if low in ("true", "false") else value
    elif typ == "null":
        return None if value.lower() == "null" else value
    return value


@tool_parser("step3", family="step3", render=RenderRules("with_tools"))
class Step3ToolParser(HeldBlockParser):
    """vLLM's ``step3`` tool-call format."""

    name = "step3"
    strip_content = True

    def stream_markers(self) -> tuple[str, ...]:
        return (CALLS_BEGIN,)

    def _arguments(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        for tool_name, schema in function_tools(self.ctx.tools):
            if tool_name == name:
                properties = (schema or {}).get("properties", {})
                for key, value in params.items():
                    params[key] = _cast(value, properties.get(key, {}).get("type"))
                break
        return params

    def extract(self, text: str, at_start: bool) -> Extraction:
        if CALLS_BEGIN not in text:
            return as_content(text)
        before, rest = text.split(CALLS_BEGIN, 1)
        if CALLS_END not in rest:
            return as_content(text)
        block, after = rest.split(CALLS_END, 1)
        calls = []
        for part in block.split(CALL_BEGIN):
            if CALL_END not in part:
                continue
            body = part.split(CALL_END, 1)[0]
            if SEP not in body:
                continue
            kind, invoke = body.split(SEP, 1)
            m = _INVOKE.search(invoke)
            if kind.strip() != "function" or m is None:
                continue
            params = {k: v.strip() for k, v in _PARAM.findall(invoke)}
            calls.append((m.group(1), dumps_args(self._arguments(m.group(1), params))))
        if not calls:
            return as_content(text)
        content = before + after
        content = content.strip() if at_start else content.rstrip()
        return Extraction(content or None, calls)


# Step-3.5/3.7 differ from Qwen3 only in reasoning handling, not in the tool grammar.
Step3p5ToolParser = tool_parser("step3p5", family="qwen3_coder")(
    family_parser("Step3p5ToolParser", qwen_coder_family("step3p5"))
)


Step5ToolParser = tool_parser("step5", family="qwen3_coder")(
    family_parser(
        "Step5ToolParser",
        qwen_coder_family(
            "step5", strip_content_with_tools=False, drop_ws_content_before_tools=False
        ),
    )
)
Step3p5ToolParser.incremental = streamed_tag_parser(Step3p5ToolParser, QWEN_PARAMS)
Step5ToolParser.incremental = streamed_tag_parser(Step5ToolParser, QWEN_PARAMS)


#: Step-3.5/3.7: the template always opens ``<think>``; trailing whitespace is stripped.
STEP3P5 = replace(QWEN3, thinking=ALWAYS_ON, strip_trailing_whitespace=True)


#: Step3: no start marker; the text before the first ``</think>`` is reasoning.
STEP3 = MarkerFormat(start=(), drop_end_in_content=False, drop_special_tokens=False)
register_format(MarkerEngineParser, STEP3P5, "step3p5", family="qwen3")
register_format(MarkerPartitionParser, STEP3, "step3", family="step3")
