"""Name -> parser class, for tool-call and reasoning parsers, with every alias users paste.

Family modules register themselves with ``@tool_parser(...)`` / ``@reasoning_parser(...)``, which
also carry the render-side declarations (``parsers.declare``) that render reads from here;
``load_all()`` imports the modules of ``FAMILY_MODULES``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from tokenbridge.parsers.base import ReasoningParser, ToolParser
from tokenbridge.parsers.declare import RenderRules

NO_RENDER_RULES = RenderRules()


@dataclass
class Entry:
    name: str
    cls: type
    family: str
    aliases: list[str] = field(default_factory=list)
    #: A tool parser's request changes (``render/parser_adjust.py``).
    render: RenderRules = NO_RENDER_RULES
    #: A reasoning parser whose vLLM adapter clears ``skip_special_tokens`` on every request.
    keeps_special: bool = False


TOOL: dict[str, Entry] = {}
REASONING: dict[str, Entry] = {}
_ALIAS_TOOL: dict[str, str] = {}
_ALIAS_REASONING: dict[str, str] = {}
_loaded = False

#: The family modules under ``parsers/families/``, one line per family.
FAMILY_MODULES = (
    "apertus",
    "cohere",
    "deepseek",
    "deepseek_dsml",
    "dots",
    "ernie45",
    "functiongemma",
    "gemma4",
    "gigachat3",
    "glm",
    "granite",
    "harmony",
    "hermes",
    "hunyuan",
    "inkling",
    "internlm",
    "jamba",
    "k2_horizon",
    "kimi",
    "kimi_k3",
    "lfm2",
    "llama",
    "mimo",
    "minicpm5",
    "minicpmv",
    "minimax",
    "mistral",
    "muse",
    "muse_reasoning",
    "olmo3",
    "phi4_mini",
    "plamo",
    "poolside",
    "pythonic",
    "qwen",
    "response_template",
    "seed_oss",
    "step",
    "xlam",
)

# Spellings other servers' parser factories accept for a family we have, where the family
# module does not declare them (SMG 1.13's CLI choices). Names those servers map to a parser
# we do not have (SMG's ``json``, ``plain``, ``passthrough``, ``base``, ``kimi`` with
# ``◁think▷`` tokens, ``qwen3_tagged``, ``iquest``, ``sarashina``, ``llama_nemotron``) stay out,
# as do reasoning spellings of families that have no reasoning parser here (``lfm2.5``, ``xlam``).
EXTRA_TOOL_ALIASES = {
    "qwen2.5": "hermes",
    "mistral_v13": "mistral",
    "deepseek_v4.1": "deepseek_v41",
    "lfm2.5": "lfm2",
    "hy4": "hy_v4",
    "dots3": "dots",
    "function_gemma": "functiongemma",
    "ling": "ling3",
}
EXTRA_REASONING_ALIASES = {
    "mistral_v13": "mistral",
    "deepseek_v4.1": "deepseek_v41",
    "hy4": "hy_v4",
    "glm4": "glm45",
    "ling": "ling3",
}


def _register(table, alias_table, name, aliases, family, **declared):
    def deco(cls):
        entry = Entry(name, cls, family or name, list(aliases), **declared)
        if name in table or name in alias_table:
            raise RuntimeError(f"parser name registered twice: {name}")
        table[name] = entry
        for a in aliases:
            if a in alias_table or a in table:
                raise RuntimeError(f"parser alias registered twice: {a}")
            alias_table[a] = name
        return cls

    return deco


def tool_parser(name: str, *aliases: str, family: str | None = None, render: RenderRules = NO_RENDER_RULES):
    return _register(TOOL, _ALIAS_TOOL, name, aliases, family, render=render)


def reasoning_parser(name: str, *aliases: str, family: str | None = None, keeps_special: bool = False):
    return _register(REASONING, _ALIAS_REASONING, name, aliases, family, keeps_special=keeps_special)


def load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in FAMILY_MODULES:
        importlib.import_module(f"tokenbridge.parsers.families.{module}")
    for table, alias_table, extra in (
        (TOOL, _ALIAS_TOOL, EXTRA_TOOL_ALIASES),
        (REASONING, _ALIAS_REASONING, EXTRA_REASONING_ALIASES),
    ):
        for alias, name in extra.items():
            target = alias_table.get(alias, alias if alias in table else None)
            if target == name:
                continue  # the family module declares it already
            if target is not None or name not in table:
                raise RuntimeError(f"parser alias {alias!r} -> {name!r} clashes or has no parser")
            alias_table[alias] = name
            table[name].aliases.append(alias)


def _lookup(table, alias_table, name):
    load_all()
    key = alias_table.get(name, name)
    return table.get(key)


def get_tool_parser(name: str) -> type[ToolParser] | None:
    e = _lookup(TOOL, _ALIAS_TOOL, name)
    return e.cls if e else None


def get_reasoning_parser(name: str) -> type[ReasoningParser] | None:
    e = _lookup(REASONING, _ALIAS_REASONING, name)
    return e.cls if e else None


def tool_render_rules(name: str) -> RenderRules:
    """The request changes of the tool parser ``name`` (an alias or unknown name: its parser's, or none)."""
    e = _lookup(TOOL, _ALIAS_TOOL, name)
    return e.render if e else NO_RENDER_RULES


def reasoning_keeps_special(name: str) -> bool:
    e = _lookup(REASONING, _ALIAS_REASONING, name)
    return bool(e and e.keeps_special)


def canonical_tool_name(name: str) -> str:
    """The registered name behind an alias (the name itself when unknown)."""
    e = _lookup(TOOL, _ALIAS_TOOL, name)
    return e.name if e else name


def canonical_reasoning_name(name: str) -> str:
    e = _lookup(REASONING, _ALIAS_REASONING, name)
    return e.name if e else name


def tool_names() -> list[str]:
    load_all()
    return sorted([*TOOL, *_ALIAS_TOOL])


def reasoning_names() -> list[str]:
    load_all()
    return sorted([*REASONING, *_ALIAS_REASONING])


def describe() -> dict:
    """The ``tokenbridge parsers --json`` document."""
    load_all()

    def rows(table):
        return [
            {"name": e.name, "aliases": e.aliases, "family": e.family, "module": e.cls.__module__}
            for e in sorted(table.values(), key=lambda e: e.name)
        ]

    return {"tool": rows(TOOL), "reasoning": rows(REASONING)}
