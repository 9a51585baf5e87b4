"""The xgrammar structural tags vLLM 0.33 puts into ``structured_outputs.structural_tag``.

A structural tag is a tree of xgrammar formats, serialized as vLLM does
(``json.dumps`` of the pydantic dump): every field of a format in declaration order, unset
ones at their default. Tool-call grammars are built from the markers and layouts each family
declares (``parsers.declare.ToolCallGrammar``); Harmony (gpt-oss) builds its channel grammar here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal
from tokenbridge.parsers.declare import ToolCallGrammar

_REQUIRED = object()

# Each xgrammar format's fields after ``type``, in serialization order, with their defaults.
FORMAT_FIELDS: dict[str, tuple[tuple[str, Any], ...]] = {
    "const_string": (("value", _REQUIRED),),
    "json_schema": (
        ("json_schema", _REQUIRED),
        ("style", "json"),
        ("any_order", False),
        ("max_whitespace_cnt", None),
        ("excludes", []),
    ),
    "any_text": (("excludes", []), ("max_tokens", None), ("max_chars", None)),
    "token": (("token", _REQUIRED),),
    "exclude_token": (("exclude_tokens", []),),
    "any_tokens": (("exclude_tokens", []), ("max_tokens", None)),
    "grammar": (("grammar", _REQUIRED),),
    "regex": (("pattern", _REQUIRED),),
    "qwen_xml_parameter": (("json_schema", _REQUIRED),),
    "sequence": (("elements", _REQUIRED),),
    "or": (("elements", _REQUIRED),),
    "tag": (("begin", _REQUIRED), ("content", _REQUIRED), ("end", _REQUIRED)),
    "triggered_tags": (
        ("triggers", _REQUIRED),
        ("tags", _REQUIRED),
        ("at_least_one", False),
        ("stop_after_first", False),
        ("excludes", []),
    ),
    "token_triggered_tags": (
        ("trigger_tokens", _REQUIRED),
        ("tags", _REQUIRED),
        ("exclude_tokens", []),
        ("at_least_one", False),
        ("stop_after_first", False),
    ),
    "tags_with_separator": (
        ("tags", _REQUIRED),
        ("separator", _REQUIRED),
        ("at_least_one", False),
        ("stop_after_first", False),
    ),
    "optional": (("content", _REQUIRED),),
    "plus": (("content", _REQUIRED),),
    "star": (("content", _REQUIRED),),
    "repeat": (("min", _REQUIRED), ("max", _REQUIRED), ("content", _REQUIRED)),
    "dispatch": (("rules", _REQUIRED), ("loop", True), ("excludes", [])),
    "token_dispatch": (("rules", _REQUIRED), ("loop", True), ("exclude_tokens", [])),
}
# Formats that repeat tool calls; ``parallel_tool_calls: false`` stops each after one call.
_CALL_LIST_FORMATS = frozenset({"triggered_tags", "token_triggered_tags", "tags_with_separator"})


class StructuralTagError(ValueError):
    """A structural tag given by the request is not a valid xgrammar format."""


def node(kind: str, **fields: Any) -> dict[str, Any]:
    """One xgrammar format: ``type`` first, then every field in order, defaults filled in."""
    out: dict[str, Any] = {"type": kind}
    for name, default in FORMAT_FIELDS[kind]:
        if name in fields:
            out[name] = fields[name]
        elif default is _REQUIRED:
            raise StructuralTagError(f"format {kind!r} needs {name!r}")
        else:
            out[name] = list(default) if isinstance(default, list) else default
    return out


def normalize_format(fmt: Any) -> dict[str, Any]:
    """A request's format as xgrammar re-serializes it: nested formats normalized, defaults added."""
    if not isinstance(fmt, dict) or fmt.get("type") not in FORMAT_FIELDS:
        raise StructuralTagError(f"unknown structural tag format: {fmt!r}")
    fields = {k: v for k, v in fmt.items() if k != "type"}
    if "content" in fields:
        fields["content"] = normalize_format(fields["content"])
    if "elements" in fields:
        fields["elements"] = [normalize_format(e) for e in fields["elements"]]
    if "tags" in fields:
        fields["tags"] = [normalize_format(t) for t in fields["tags"]]
    if "rules" in fields:
        fields["rules"] = [[key, normalize_format(f)] for key, f in fields["rules"]]
    for key in ("begin", "end"):
        if isinstance(fields.get(key), dict):
            fields[key] = normalize_format(fields[key])
    return node(fmt["type"], **fields)


def serialize(fmt: dict[str, Any]) -> str:
    """The ``structural_tag`` string: vLLM's ``json.dumps(StructuralTag(format=...).model_dump())``."""
    return json.dumps({"type": "structural_tag", "format": fmt})


def limit_to_single_call(fmt: dict[str, Any]) -> None:
    """Set ``stop_after_first`` on every tool-call list in ``fmt``, in place.

    Only format nodes are visited, never the JSON schemas they carry.
    """
    if fmt["type"] in _CALL_LIST_FORMATS:
        fmt["stop_after_first"] = True
    for child in _child_formats(fmt):
        limit_to_single_call(child)


def _child_formats(fmt: dict[str, Any]) -> list[dict[str, Any]]:
    children = [fmt[key] for key in ("begin", "content", "end") if isinstance(fmt.get(key), dict)]
    children += fmt.get("elements", []) + fmt.get("tags", [])
    children += [rule[1] for rule in fmt.get("rules", [])]
    return children


ToolChoiceMode = Literal["auto", "required", "forced"]


@dataclass(frozen=True)
class Tool:
    """A function tool as a structural tag sees it: name, schema, and resolved strictness."""

    name: str
    parameters: Any
    strict: bool

    @property
    def argument_schema(self) -> Any:
        """The arguments' JSON schema: the tool's own when strict, otherwise any JSON (``true``)."""
        if not self.strict or self.parameters is None:
            return True
        return self.parameters


def _json_arguments(tool: Tool, style: str = "json") -> dict[str, Any]:
    return node("json_schema", json_schema=tool.argument_schema, style=style)


def _one_or_either(formats: list[dict[str, Any]]) -> dict[str, Any]:
    return formats[0] if len(formats) == 1 else node("or", elements=formats)


def _glm_value(prop: dict[str, Any], excludes: tuple[str, ...]) -> dict[str, Any]:
    """One GLM argument value: enum constants, free text for strings, typed JSON otherwise."""
    if "enum" in prop:
        return _one_or_either(
            [node("const_string", value=v if isinstance(v, str) else json.dumps(v)) for v in prop["enum"]]
        )
    prop_type = prop.get("type")
    if isinstance(prop_type, list):
        formats = [_glm_value({"type": t}, excludes) for t in prop_type if t != "string"]
        if "string" in prop_type:
            formats.append(node("any_text", excludes=list(excludes)))
        return _one_or_either(formats)
    if prop_type in (None, "string"):
        return node("any_text", excludes=list(excludes))
    return node("json_schema", json_schema={"type": prop_type})


def _glm_plain_properties(parameters: dict[str, Any]) -> dict[str, Any] | None:
    """``properties`` of a plain object schema; ``None`` when keys cannot be listed up front."""
    properties = parameters.get("properties")
    if (
        not isinstance(properties, dict)
        or not properties
        or parameters.get("additionalProperties") is True
        or any(key in parameters for key in ("$ref", "allOf", "anyOf", "oneOf", "patternProperties"))
    ):
        return None
    return properties


def _glm_arguments(tool: Tool, excludes: tuple[str, ...]) -> dict[str, Any]:
    properties = None if tool.strict else _glm_plain_properties(tool.parameters or {})
    if properties is None:
        return node("json_schema", json_schema=tool.argument_schema if tool.strict else True, style="glm_xml")
    pairs = [
        node(
            "sequence",
            elements=[
                node("const_string", value=f"<arg_key>{key}</arg_key><arg_value>"),
                _glm_value(prop, excludes),
                node("const_string", value="</arg_value>"),
            ],
        )
        for key, prop in properties.items()
    ]
    return node("star", content=_one_or_either(pairs))


def _arguments(grammar: ToolCallGrammar, tool: Tool) -> dict[str, Any]:
    shape = grammar.arguments
    if shape == "json":
        return _json_arguments(tool)
    if shape == "qwen_xml":
        return _json_arguments(tool, "qwen_xml")
    if shape == "kimi_indexed_json":
        return node(
            "sequence",
            elements=[
                node("regex", pattern=r"\d+"),
                node("const_string", value=grammar.arguments_marker),
                _json_arguments(tool),
            ],
        )
    return _glm_arguments(tool, grammar.value_excludes)


def _call_tags(family: ToolCallGrammar, tools: list[Tool], begin_prefix: str = "", end_suffix: str = "") -> list:
    return [
        node(
            "tag",
            begin=begin_prefix + spelling.before_name + tool.name + spelling.after_name,
            content=_arguments(family, tool),
            end=spelling.end + end_suffix,
        )
        for tool in tools
        for spelling in family.spellings
    ]


def _call_list(family: ToolCallGrammar, tags: list, stop_after_first: bool = False) -> dict[str, Any]:
    return node(
        "tags_with_separator",
        tags=tags,
        separator=family.separator,
        at_least_one=True,
        stop_after_first=stop_after_first,
    )


def _section_sequence(family: ToolCallGrammar, inner: dict[str, Any]) -> dict[str, Any]:
    return node(
        "sequence",
        elements=[
            node("const_string", value=family.section_begin),
            inner,
            node("const_string", value=family.section_end),
        ],
    )


def tool_call_format(family: ToolCallGrammar, tools: list[Tool], mode: ToolChoiceMode) -> dict[str, Any]:
    """The grammar for ``tools`` under a simplified tool choice (forced: ``tools`` is the named one)."""
    tags = _call_tags(family, tools)
    excludes = list(family.text_excludes)
    if mode == "auto":
        if family.auto_layout == "section":
            section = node("tag", begin=family.section_begin, content=_call_list(family, tags), end=family.section_end)
            return node("triggered_tags", triggers=[family.trigger], tags=[section], excludes=excludes)
        return node("triggered_tags", triggers=[family.trigger], tags=tags, excludes=excludes)
    if mode == "required":
        layout = family.required_layout
        if layout == "triggered":
            return node("triggered_tags", triggers=[family.trigger], tags=tags, at_least_one=True, excludes=excludes)
        if layout == "list":
            return _call_list(family, tags)
        if layout == "section_tag":
            return node("tag", begin=family.section_begin, content=_call_list(family, tags), end=family.section_end)
        return _section_sequence(family, _call_list(family, tags))
    if family.forced_layout == "tag":
        return _call_tags(family, tools, family.section_begin, family.section_end)[0]
    if family.forced_layout == "list":
        return _call_list(family, tags, stop_after_first=True)
    return _section_sequence(family, tags[0])


def grammar_for(grammar: ToolCallGrammar, tools: list[Tool]) -> ToolCallGrammar:
    """The family's grammar for these tools (its ``all_strict`` one when every tool is strict)."""
    if grammar.all_strict is not None and tools and all(tool.strict for tool in tools):
        return grammar.all_strict
    return grammar


# Harmony (gpt-oss): messages on analysis/commentary/final channels, calls addressed ``to=functions.N``.
_HARMONY_END = ["<|end|>", ""]
_HARMONY_JSON_CONSTRAINTS = (" json", " <|constrain|>json")
_HARMONY_CALL_CHANNELS = ("<|channel|>commentary", "<|channel|>analysis", "<|channel|>final")
# Recipient after the role, or after the channel.
_HARMONY_CALL_BEGINS = (
    " to=functions.{name}{channel}{constrain}<|message|>",
    "{channel} to=functions.{name}{constrain}<|message|>",
)
_HARMONY_FINAL_BEGIN = "<|channel|>final{constrain}<|message|>"


def _harmony_preamble(channel: str) -> dict[str, Any]:
    return node(
        "optional",
        content=node(
            "sequence",
            elements=[
                node("tag", begin=f"<|channel|>{channel}<|message|>", content=node("any_text"), end="<|end|>"),
                node("const_string", value="<|start|>assistant"),
            ],
        ),
    )


def _harmony_message(content: dict[str, Any], allow_commentary: bool) -> dict[str, Any]:
    channels = ("analysis", "commentary") if allow_commentary else ("analysis",)
    return node("sequence", elements=[*(_harmony_preamble(c) for c in channels), content])


def harmony_tool_call_format(tools: list[Tool], mode: ToolChoiceMode) -> dict[str, Any]:
    """gpt-oss tool calls: any channel, either recipient position, optional ``json`` constraint."""
    tags = [
        node(
            "tag",
            begin=pattern.format(name=tool.name, channel=channel, constrain=constrain),
            content=_json_arguments(tool),
            end=list(_HARMONY_END),
        )
        for tool in tools
        for pattern in _HARMONY_CALL_BEGINS
        for constrain in _HARMONY_JSON_CONSTRAINTS
        for channel in _HARMONY_CALL_CHANNELS
    ]
    if mode == "auto":
        tags.extend(
            node("tag", begin=_HARMONY_FINAL_BEGIN.format(constrain=c), content=node("any_text"), end=_HARMONY_END)
            for c in (*_HARMONY_JSON_CONSTRAINTS, "")
        )
    return _harmony_message(node("or", elements=tags), allow_commentary=True)


def harmony_final_format(output: dict[str, Any]) -> dict[str, Any]:
    """gpt-oss output constrained on the final channel, after optional analysis."""
    if output["type"] == "json_schema":
        content = node(
            "or",
            elements=[
                node("tag", begin=_HARMONY_FINAL_BEGIN.format(constrain=c), content=output, end=list(_HARMONY_END))
                for c in _HARMONY_JSON_CONSTRAINTS
            ],
        )
    else:
        content = node("tag", begin=_HARMONY_FINAL_BEGIN.format(constrain=""), content=output, end=list(_HARMONY_END))
    return _harmony_message(content, allow_commentary=False)


def output_format(structured_outputs: dict[str, Any]) -> dict[str, Any] | None:
    """vLLM's ``structured_outputs_to_format``: a request's output constraint as one format."""
    so = structured_outputs
    if so.get("json_object"):
        return node("json_schema", json_schema={"type": "object"})
    if so.get("json") is not None:
        schema = so["json"]
        return node("json_schema", json_schema=json.loads(schema) if isinstance(schema, str) else schema)
    if so.get("regex") is not None:
        return node("regex", pattern=so["regex"])
    if so.get("choice") is not None:
        return node("or", elements=[node("const_string", value=c) for c in so["choice"]])
    if so.get("grammar") is not None:
        return node("grammar", grammar=so["grammar"])
    if so.get("structural_tag") is not None:
        return _request_structural_tag_format(so["structural_tag"])
    return None


def _request_structural_tag_format(text: str) -> dict[str, Any]:
    try:
        tag = json.loads(text)
    except json.JSONDecodeError as e:
        raise StructuralTagError(f"structural_tag is not JSON: {e}") from e
    if not isinstance(tag, dict):
        raise StructuralTagError("structural_tag must be an object")
    if "structures" in tag:
        return node(
            "triggered_tags",
            triggers=tag["triggers"],
            tags=[
                node("tag", begin=s["begin"], content=node("json_schema", json_schema=s["schema"]), end=s["end"])
                for s in tag["structures"]
            ],
        )
    return normalize_format(tag.get("format"))
