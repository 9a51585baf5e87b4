"""What vLLM's parsers change in a chat request before it is rendered (``adjust_request``).

A configured parser may force ``skip_special_tokens`` off (so its markers survive
detokenization) and turn a forced tool choice into a JSON-schema constraint. These facts
belong to vLLM's parser classes, keyed here by their registered names; render applies them
exactly when vLLM calls ``adjust_request``: when a reasoning parser is configured or the
effective ``tool_choice`` is not ``"none"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# When a tool parser clears skip_special_tokens: "never"; "with_tools" (tools given and
# tool_choice is not "none"); "always" (every adjusted request: vLLM's engine-based adapters).
KeepSpecial = Literal["never", "with_tools", "always"]
# Which schema a required/named tool_choice becomes: none, vLLM's generic
# ``[{"name", "parameters"}]`` array, or Mistral's ``[{"name", "arguments"}]`` array.
ForcedSchema = Literal["none", "tools", "mistral"]


@dataclass(frozen=True)
class ToolParserRules:
    keep_special: KeepSpecial = "never"
    # vLLM's structural-tag model: with one, forced choices become a structural tag instead.
    structural_tag_model: str | None = None
    forced_schema: ForcedSchema = "tools"


TOOL_PARSER_RULES: dict[str, ToolParserRules] = {
    "hermes": ToolParserRules("with_tools", "hermes"),
    "qwen3_coder": ToolParserRules("always", "qwen_3_coder"),
    "qwen3_xml": ToolParserRules("always", "qwen_3_coder"),
    "llama3_json": ToolParserRules("never", "llama"),
    "llama4_json": ToolParserRules("never", "llama"),
    "pythonic": ToolParserRules("never"),
    "deepseek_v3": ToolParserRules("never", "deepseek_r1"),
    "deepseek_v31": ToolParserRules("never", "deepseek_v3_1"),
    "glm45": ToolParserRules("always", "glm_4_7", "none"),
    "glm47": ToolParserRules("always", "glm_4_7", "none"),
    "kimi_k2": ToolParserRules("with_tools", "kimi", "none"),
    "granite": ToolParserRules("always"),
    "phi4_mini_json": ToolParserRules("never"),
    "mistral": ToolParserRules("with_tools", None, "mistral"),
    "openai": ToolParserRules("never", "harmony"),
    "jamba": ToolParserRules("with_tools"),
    "internlm": ToolParserRules("with_tools"),
    "step3": ToolParserRules("with_tools"),
    "granite4": ToolParserRules("with_tools"),
}
_DEFAULT_TOOL_RULES = ToolParserRules()

# vLLM's engine-based reasoning adapters clear skip_special_tokens on every request.
REASONING_KEEPS_SPECIAL = frozenset({"qwen3", "glm45", "glm47", "kimi_k2", "nemotron_v3", "seed_oss"})


@dataclass
class Adjustment:
    skip_special_tokens: bool | None  # None: leave the request's value
    structured_outputs: dict | None  # a StructuredOutputsParams spec replacing the request's


def adjust_request(
    tool_parser: str | None,
    reasoning_parser: str | None,
    tools: list[dict] | None,
    tool_choice: Any,
    parallel_tool_calls: bool | None,
    has_structured_outputs: bool,
) -> Adjustment:
    out = Adjustment(None, None)
    if not (reasoning_parser or (tool_parser and tool_choice != "none")):
        return out
    if reasoning_parser in REASONING_KEEPS_SPECIAL:
        out.skip_special_tokens = False
    if not tool_parser:
        return out
    rules = TOOL_PARSER_RULES.get(tool_parser, _DEFAULT_TOOL_RULES)
    tools_active = bool(tools) and tool_choice != "none"
    if rules.keep_special == "always" or (rules.keep_special == "with_tools" and tools_active):
        out.skip_special_tokens = False
    forced = tool_choice == "required" or isinstance(tool_choice, dict)
    if not (tools and forced) or rules.structural_tag_model is not None:
        return out
    if rules.forced_schema == "tools":
        out.structured_outputs = {"json": forced_tool_schema(tools, tool_choice, parallel_tool_calls)}
    elif rules.forced_schema == "mistral" and not has_structured_outputs:
        schema = mistral_forced_schema(tools, tool_choice)
        if schema is not None:
            out.structured_outputs = {"json": schema}
    return out


def _function(tool: dict) -> dict:
    fn = tool.get("function") if isinstance(tool, dict) else None
    return fn if isinstance(fn, dict) else {}


def _params_or_empty_object(params: dict | None) -> dict:
    return params if params else {"type": "object", "properties": {}}


def forced_tool_schema(tools: list[dict], tool_choice: Any, parallel_tool_calls: bool | None) -> dict:
    """vLLM's ``get_json_schema_from_tools`` for a named or ``required`` choice."""
    if isinstance(tool_choice, dict):
        name = _function(tool_choice).get("name")
        chosen = next(_function(t) for t in tools if _function(t).get("name") == name)
        return _params_or_empty_object(chosen.get("parameters"))
    schema: dict[str, Any] = {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "anyOf": [
                {
                    "properties": {
                        "name": {"type": "string", "enum": [_function(t).get("name")]},
                        "parameters": _params_or_empty_object(_function(t).get("parameters")),
                    },
                    "required": ["name", "parameters"],
                }
                for t in tools
            ],
        },
    }
    if parallel_tool_calls is False:
        schema["maxItems"] = 1
    return schema


def mistral_forced_schema(tools: list[dict], tool_choice: Any) -> dict | None:
    """The Mistral parser's pre-v11 schema: a bare ``[{"name", "arguments"}]`` array."""
    extra: dict[str, Any] = {}
    applicable = tools
    if isinstance(tool_choice, dict):
        name = _function(tool_choice).get("name")
        applicable = [t for t in tools if _function(t).get("name") == name]
        if not applicable:
            return None
        extra["maxItems"] = 1
    any_of = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [_function(t).get("name")]},
                "arguments": _function(t).get("parameters") or {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for t in applicable
    ]
    return {"type": "array", "minItems": 1, **extra, "items": {"type": "object", "anyOf": any_of}}
