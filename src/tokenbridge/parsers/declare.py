"""What a family declares for render: the request changes its vLLM parser makes, and its
structural-tag grammar. Data only: render builds from it (``render/parser_adjust.py``,
``render/structural_tags.py``), reading each family's row through ``parsers.registry``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

# When a tool parser clears skip_special_tokens: "never"; "with_tools" (tools given and
# tool_choice is not "none"); "always" (every adjusted request: vLLM's engine-based adapters).
KeepSpecial = Literal["never", "with_tools", "always"]
# Which schema a required/named tool_choice becomes: none, vLLM's generic
# ``[{"name", "parameters"}]`` array, or Mistral's ``[{"name", "arguments"}]`` array.
ForcedSchema = Literal["none", "tools", "mistral"]


class ToolStrictLevel(enum.IntEnum):
    """vLLM's floor for tool-call structural tags.

    AUTO: constrain calls only for required/named choices or strict tools; FUNCTION: also
    for ``auto``; PARAMETER: pin every tool's argument schema as if it were strict.
    """

    AUTO = 0
    FUNCTION = 1
    PARAMETER = 2


# Argument grammars: JSON, Qwen XML parameters, Kimi's ``<index><arguments marker>{json}``,
# and GLM's ``<arg_key>/<arg_value>`` pairs (schema-pinned for strict tools, shallow otherwise).
ArgumentsShape = Literal["json", "qwen_xml", "kimi_indexed_json", "glm_pairs"]
# auto: "calls" triggers on the call marker; "section" triggers on the section opener.
AutoLayout = Literal["calls", "section"]
# required: "triggered" call tags with at least one; "list" back-to-back calls; "section_tag" a
# section tag around the list; "section_sequence" section markers as constant strings.
RequiredLayout = Literal["triggered", "list", "section_tag", "section_sequence"]
# forced: "tag" one call (section markers folded in); "list" a list stopped after one call;
# "section_sequence" the single call between constant section markers.
ForcedLayout = Literal["tag", "list", "section_sequence"]

THINK_TOKENS = ("<think>", "</think>")


@dataclass(frozen=True)
class CallSpelling:
    """One way a call is written: ``before_name + name + after_name``, arguments, ``end``."""

    before_name: str
    after_name: str
    end: str


@dataclass(frozen=True)
class ToolCallGrammar:
    """How one model family writes tool calls, and how each tool choice constrains them
    (vLLM's structural-tag model); ``all_strict`` replaces it when every tool is strict."""

    spellings: tuple[CallSpelling, ...]
    arguments: ArgumentsShape
    trigger: str
    auto_layout: AutoLayout
    required_layout: RequiredLayout
    forced_layout: ForcedLayout
    text_excludes: tuple[str, ...] = ()
    section_begin: str = ""
    section_end: str = ""
    separator: str = ""
    #: What a ``kimi_indexed_json`` call writes between its index and its arguments.
    arguments_marker: str = ""
    #: What a ``glm_pairs`` string value may not contain.
    value_excludes: tuple[str, ...] = ()
    all_strict: ToolCallGrammar | None = None


@dataclass(frozen=True)
class RenderRules:
    """A tool parser's ``adjust_request``: special tokens kept, and how calls are constrained: by
    vLLM's structural-tag model ``structural_tag`` when it has one (its ``grammar``; Harmony's is
    built by render), else by a forced schema."""

    keep_special: KeepSpecial = "never"
    structural_tag: str | None = None
    forced_schema: ForcedSchema = "tools"
    default_strict_level: ToolStrictLevel = ToolStrictLevel.AUTO
    grammar: ToolCallGrammar | None = None


def hermes_style(start: str, end: str) -> ToolCallGrammar:
    """``<start>{"name": …, "arguments": …}<end>`` calls, back to back."""
    return ToolCallGrammar(
        spellings=(
            CallSpelling(start + '\n{"name": "', '", "arguments": ', "}\n" + end),
            CallSpelling(start + '{"name": "', '", "arguments": ', "}" + end),
        ),
        arguments="json",
        trigger=start,
        auto_layout="calls",
        required_layout="list",
        forced_layout="list",
    )


def triggered_calls(spelling: CallSpelling, trigger: str, arguments: ArgumentsShape) -> ToolCallGrammar:
    """Calls anywhere in the text, each one a tag once its trigger shows."""
    return ToolCallGrammar(
        spellings=(spelling,),
        arguments=arguments,
        trigger=trigger,
        auto_layout="calls",
        required_layout="triggered",
        forced_layout="tag",
        text_excludes=THINK_TOKENS,
    )
