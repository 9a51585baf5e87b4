"""What vLLM's parsers change in a chat request before it is rendered (``adjust_request``).

A configured parser may force ``skip_special_tokens`` off (so its markers survive
detokenization) and constrain tool calls: with an xgrammar structural tag for parsers that
have a structural-tag model, with a JSON schema for a forced choice otherwise. Harmony
(gpt-oss) also moves an output constraint onto its final channel. These facts belong to
vLLM's parser classes; each family declares them with its parser (``parsers.declare``), and
render reads them from ``parsers.registry``. Render applies them exactly
when vLLM calls ``adjust_request``: when a reasoning parser is configured or the effective
``tool_choice`` is not ``"none"`` (for Harmony, whenever a parser is configured).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokenbridge.parsers import registry
from tokenbridge.parsers.declare import RenderRules, ToolStrictLevel
from tokenbridge.protocol.errors import bad_request
from tokenbridge.render import structural_tags as st

# Fields a Harmony output constraint clears when it becomes a structural tag.
_OUTPUT_CONSTRAINT_KEYS = ("json", "regex", "choice", "grammar", "json_object")


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
    structured_outputs: dict | None,
    harmony: bool = False,
    overridable: bool | None = None,
) -> Adjustment:
    """vLLM's parser ``adjust_request``; ``structured_outputs`` is the request's current spec.

    ``overridable`` tells the Mistral rule whether that spec may be replaced by the forced tool
    schema: true when the request set no ``structured_outputs`` and its ``response_format`` (if
    any) is text/json_object/json_schema; None means "only when there is no spec"."""
    out = Adjustment(None, None)
    if harmony:
        if not (reasoning_parser or tool_parser):
            return out
        out.structured_outputs = harmony_output_constraint(structured_outputs)
        if out.structured_outputs is not None:
            structured_outputs = out.structured_outputs
    elif not (reasoning_parser or (tool_parser and tool_choice != "none")):
        return out
    if reasoning_parser and registry.reasoning_keeps_special(reasoning_parser):
        out.skip_special_tokens = False
    if not tool_parser:
        return out
    rules = registry.tool_render_rules(tool_parser)
    tools_active = bool(tools) and tool_choice != "none"
    if rules.keep_special == "always" or (rules.keep_special == "with_tools" and tools_active):
        out.skip_special_tokens = False
    if rules.structural_tag is not None:
        tag = tool_call_structural_tag(
            rules,
            tools,
            tool_choice,
            parallel_tool_calls,
            structured_outputs,
        )
        if tag is not None:
            out.structured_outputs = {"structural_tag": tag}
        return out
    forced = tool_choice == "required" or isinstance(tool_choice, dict)
    if not (tools and forced):
        return out
    if rules.forced_schema == "tools":
        out.structured_outputs = {"json": forced_tool_schema(tools, tool_choice, parallel_tool_calls)}
    elif rules.forced_schema == "mistral" and (not structured_outputs if overridable is None else overridable):
        schema = mistral_forced_schema(tools, tool_choice)
        if schema is not None:
            out.structured_outputs = {"json": schema}
    return out


def harmony_output_constraint(structured_outputs: dict | None) -> dict | None:
    """Harmony's output constraint moved onto the final channel, other settings kept."""
    if not structured_outputs:
        return None
    output = st.output_format(structured_outputs)
    if output is None:
        return None
    spec = dict(structured_outputs)
    spec.update(dict.fromkeys(_OUTPUT_CONSTRAINT_KEYS))
    spec["structural_tag"] = st.serialize(st.harmony_final_format(output))
    return spec


def tool_call_structural_tag(
    rules: RenderRules,
    tools: list[dict] | None,
    tool_choice: Any,
    parallel_tool_calls: bool | None,
    structured_outputs: dict | None,
) -> str | None:
    """vLLM's ``_apply_structural_tag``: the tag constraining tool calls, or ``None`` for none."""
    strict_level = rules.default_strict_level
    is_auto = tool_choice == "auto"
    if not tools or not (is_auto or tool_choice == "required" or isinstance(tool_choice, dict)):
        return None
    single_call = parallel_tool_calls is False
    if single_call and not (is_auto and structured_outputs):
        strict_level = max(strict_level, ToolStrictLevel.FUNCTION)
    if is_auto and structured_outputs and not _xgrammar_may_support(structured_outputs):
        return None  # vLLM leaves the request's own constraint alone
    declared = [_function(t) for t in tools]
    if is_auto and strict_level == ToolStrictLevel.AUTO and not any(f.get("strict") is True for f in declared):
        return None
    resolved = [
        st.Tool(
            name=f.get("name"),
            parameters=f.get("parameters"),
            strict=strict_level >= ToolStrictLevel.PARAMETER or f.get("strict") is True,
        )
        for f in declared
    ]
    output = st.output_format(structured_outputs) if is_auto and structured_outputs else None
    mode: st.ToolChoiceMode = "auto" if is_auto and output is None else "required"
    if isinstance(tool_choice, dict):
        name = _function(tool_choice).get("name")
        resolved = [t for t in resolved if t.name == name]
        mode = "forced"
        if len(resolved) > 1:  # xgrammar's builtin structural tag refuses an ambiguous name
            raise bad_request("Forced tool choice must resolve to exactly one tool.")
    if rules.grammar is None:  # Harmony's channels, built by render
        fmt = st.harmony_tool_call_format(resolved, mode)
    else:
        fmt = st.tool_call_format(st.grammar_for(rules.grammar, resolved), resolved, mode)
    if single_call:
        st.limit_to_single_call(fmt)
    if output is not None:
        fmt = st.node("or", elements=[fmt, output])
    return st.serialize(fmt)


def _xgrammar_may_support(so: dict) -> bool:
    """False where vLLM's xgrammar check refuses the request's constraint whatever its content:
    it looks at a falsy ``choice``, ``json_object``, ``grammar`` or ``structural_tag`` as unset,
    and refuses a NUL in a regex. (What xgrammar then refuses inside a constraint is not known
    here.)"""
    if so.get("regex") is not None:
        return "\x00" not in so["regex"]
    return bool(so.get("choice") or so.get("json") is not None or so.get("json_object")
                or so.get("grammar") or so.get("structural_tag"))


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
