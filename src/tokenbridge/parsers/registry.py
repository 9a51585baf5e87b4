"""Name -> parser class, for tool-call and reasoning parsers, with every alias users paste.

Family modules register themselves with ``@tool_parser(...)`` / ``@reasoning_parser(...)``, which
also carry the render-side declarations (``parsers.declare``) that render reads from here;
``load_all()`` imports the modules of ``FAMILY_MODULES``; a lookup by name imports only the
module that registers it (``_TOOL_HOMES``, ``_REASONING_HOMES``).
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


# The family module that registers each name and alias (its own or one of the extra ones above),
# so looking a parser up imports that module alone: a server runs one tool and one reasoning
# parser, and all the families' modules cost ~5 MB. tests/parsers/test_registry.py pins these
# to what the modules register.
_TOOL_HOMES = {
    "apertus": "apertus apertus2509", "cohere": "cohere_command3 cohere_command4 cohere",
    "deepseek": "deepseek_v3 deepseek_v31 deepseekv3 deepseek deepseekv31 deepseek31 deepseek_v3_1 deepseekv3.1",
    "deepseek_dsml": "deepseek_v32 deepseek_v4 deepseek_v41 deepseekv32 deepseek32 deepseek_v3_2 deepseekv4 deepseek-v4 deepseek_v4.1",
    "dots": "dots dots3", "ernie45": "ernie45", "functiongemma": "functiongemma function_gemma",
    "gemma4": "gemma4 gemma-4", "gigachat3": "gigachat3",
    "glm": "glm45 ling3 glm47 glm45_moe glm47_moe glm glm4 ling", "granite": "granite granite4 granite-20b-fc",
    "harmony": "openai gpt-oss harmony", "hermes": "hermes longcat qwen3_json qwen qwen25 qwen3 qwen2.5",
    "hunyuan": "hy_v3 hy_v4 hunyuan_a13b hunyuan hy4", "inkling": "inkling", "internlm": "internlm interns1",
    "jamba": "jamba", "k2_horizon": "k2_horizon", "kimi": "kimi_k2 kimik2", "kimi_k3": "kimi_k3",
    "lfm2": "lfm2 lfm2.5", "llama": "llama3_json llama4_json llama llama3", "mimo": "mimo",
    "minicpm5": "minicpm5", "minimax": "minimax_m2 minimax_m3 minimax-m2 minimax minimax-m3",
    "mistral": "mistral mistral_v13", "muse": "muse muse_glimmer musespark1x",
    "phi4_mini": "phi4_mini_json phi4", "plamo": "plamo3", "poolside": "poolside_v1",
    "pythonic": "pythonic llama4_pythonic olmo3",
    "qwen": "qwen3_coder qwen3_xml qwen_xml qwen_coder nemotron nemotron_nano", "response_template": "hf beam",
    "seed_oss": "seed_oss", "step": "step3 step3p5 step5", "xlam": "xlam",
}
_REASONING_HOMES = {
    "cohere": "cohere_command3 cohere_command4 cohere_cmd",
    "deepseek": "deepseek_r1 deepseek_v3 holo2 step5 deepseek-r1 deepseek_v31 deepseek-v3 deepseek_v3_1",
    "deepseek_dsml": "deepseek_v4 deepseek_v41 deepseek-v4 deepseek_v4.1", "ernie45": "ernie45",
    "gemma4": "gemma4", "glm": "glm45 ling3 glm47 glm glm_moe_dsa glm4 ling", "granite": "granite",
    "harmony": "openai_gptoss gpt-oss gpt_oss", "hunyuan": "hy_v3 hy_v4 hunyuan_a13b hy4", "inkling": "inkling",
    "k2_horizon": "k2_horizon", "kimi": "kimi_k2 kimi_k25 kimi_thinking", "kimi_k3": "kimi_k3", "mimo": "mimo",
    "minicpmv": "minicpmv",
    "minimax": "minimax_m2_append_think minimax_m2 minimax_m3 minimax-append-think minimax minimax-m3",
    "mistral": "mistral mistral_v13", "muse_reasoning": "musespark1x muse_glimmer muse", "olmo3": "olmo3",
    "plamo": "plamo3", "poolside": "poolside_v1",
    "qwen": "qwen3 nemotron_v3 granite_thinking_parser qwen3_5 qwen3-thinking qwen3_thinking nano_v3 nemotron_3 nemotron3 granite_thinking",
    "response_template": "hf beam", "seed_oss": "seed_oss", "step": "step3p5 step3",
}
_HOME = {
    id(table): {name: module for module, names in homes.items() for name in names.split()}
    for table, homes in ((TOOL, _TOOL_HOMES), (REASONING, _REASONING_HOMES))
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
    entry = table.get(alias_table.get(name, name))
    if entry is None and not _loaded and name:
        entry = _import_home(table, alias_table, name)
    return entry


def _import_home(table, alias_table, name):
    """A name not registered yet: import the family module that registers it (every module
    when it is none of ours), recording an extra alias as ``load_all()`` does."""
    module = _HOME[id(table)].get(name)
    if module is None:
        load_all()
    else:
        importlib.import_module(f"tokenbridge.parsers.families.{module}")
        target = (EXTRA_TOOL_ALIASES if table is TOOL else EXTRA_REASONING_ALIASES).get(name)
        if target in table and name not in table and name not in alias_table:
            alias_table[name] = target
            table[target].aliases.append(name)
    return table.get(alias_table.get(name, name))


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
