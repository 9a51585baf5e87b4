"""The registry: every vLLM 0.33 parser name resolves, aliases are unique, every registered
parser takes plain text without raising, and ``parsers/__init__.py``'s family -> file map
matches what the family modules register."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import SHARED
from tokenbridge import parsers
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext, ToolParser

VLLM_NAMES = json.loads((SHARED / "docs" / "parser-names.json").read_text())


def test_parsers_json_lists_every_vllm_name():
    out = subprocess.run(
        [sys.executable, "-m", "tokenbridge.cli", "parsers", "--json"], capture_output=True, text=True, check=True
    )
    doc = json.loads(out.stdout)
    for kind in ("tool", "reasoning"):
        listed = {e["name"] for e in doc[kind]} | {a for e in doc[kind] for a in e["aliases"]}
        assert set(VLLM_NAMES[kind]) <= listed, sorted(set(VLLM_NAMES[kind]) - listed)


# SMG 1.13's CLI choices (smg_rs.get_available_*_parsers) whose family tokenbridge has.
SMG_1_13 = {
    "tool": ["qwen2.5", "mistral_v13", "deepseek_v4.1", "lfm2.5", "hy4", "dots3", "function_gemma", "ling",
             "cohere", "deepseek", "deepseek31", "deepseek32", "glm45_moe", "glm47_moe", "kimik2", "qwen_coder"],
    "reasoning": ["mistral_v13", "deepseek_v4.1", "hy4", "glm4", "ling", "cohere_cmd", "nano_v3", "kimi_k25",
                  "kimi_thinking", "qwen3_thinking", "deepseek_v31"],
}


def test_smg_names_resolve_to_their_family():
    assert registry.canonical_tool_name("qwen2.5") == "hermes"
    assert registry.canonical_tool_name("mistral_v13") == "mistral"
    assert registry.canonical_reasoning_name("deepseek_v4.1") == "deepseek_v41"
    for name in SMG_1_13["tool"]:
        assert registry.get_tool_parser(name) is not None, name
    for name in SMG_1_13["reasoning"]:
        assert registry.get_reasoning_parser(name) is not None, name


def test_parsers_json_names_each_parser_module():
    doc = registry.describe()
    for kind in ("tool", "reasoning"):
        for e in doc[kind]:
            assert e["module"].startswith((f"tokenbridge.parsers.{kind}.", "tokenbridge.parsers.families.")), e


PLAIN = "Hello, plain answer."
# Harmony's parsers read the channel tokens, not text: see test_harmony.py.
TOKEN_DRIVEN = {"openai", "openai_gptoss"}
# vLLM's minimax_m2_append_think puts the opening marker back in front of the content.
PLAIN_AS = {"minimax_m2_append_think": ("", "<think>" + PLAIN)}


@pytest.mark.parametrize("name", [n for n in registry.tool_names() if registry.canonical_tool_name(n) not in TOKEN_DRIVEN])
def test_tool_parser_passes_plain_text_through(name):
    ctx = ParseContext(tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}], tool_choice="auto")
    parser = registry.get_tool_parser(name)(ctx)
    fed, done = parser.feed(PLAIN, []), parser.finish()
    content, reasoning = fed.content + done.content, fed.reasoning + done.reasoning
    assert fed.tool_calls + done.tool_calls == []
    # A few tool parsers also split reasoning (Cohere's, Harmony's): the text is one or the other.
    assert PLAIN in (content, reasoning) and content + reasoning == PLAIN


@pytest.mark.parametrize(
    "name", [n for n in registry.reasoning_names() if registry.canonical_reasoning_name(n) not in TOKEN_DRIVEN]
)
def test_reasoning_parser_keeps_plain_text_whole(name):
    parser = registry.get_reasoning_parser(name)(ParseContext())
    (r1, c1), (r2, c2) = parser.feed(PLAIN, []), parser.finish()
    expected = PLAIN_AS.get(registry.canonical_reasoning_name(name))
    if expected:
        assert (r1 + r2, c1 + c2) == expected
    else:
        assert (r1 + r2, c1 + c2) in ((PLAIN, ""), ("", PLAIN))


def test_names_registered_once():
    rows = registry.describe()["tool"]
    listed = [n for e in rows for n in (e["name"], *e["aliases"])]
    for name in ("qwen3_coder", "qwen3_xml", "step5", "step3p5", "seed_oss", "mimo", "glm45",
                 "glm47", "ling3"):
        assert listed.count(name) == 1, name
        assert issubclass(registry.get_tool_parser(name), ToolParser)


def _family_map() -> dict[str, str]:
    """``parsers/__init__.py``'s family -> file table: module name -> its row's text."""
    rows: dict[str, str] = {}
    module = None
    for line in parsers.__doc__.split("Family -> file")[1].split("Adding a parser")[0].splitlines():
        if line.startswith("families/"):
            path, _, text = line.partition(" ")
            module, rows[path.removesuffix(".py").removeprefix("families/")] = path, text
        elif module and line.startswith(" ") and line.strip():
            rows[module.removesuffix(".py").removeprefix("families/")] += " " + line.strip()
    return rows


def test_the_family_map_lists_every_family_module_and_its_names():
    rows = _family_map()
    assert sorted(rows) == sorted(registry.FAMILY_MODULES)
    for kind in ("tool", "reasoning"):
        for e in registry.describe()[kind]:
            module = e["module"].removeprefix("tokenbridge.parsers.families.")
            assert re.search(rf"(?<![\w-]){re.escape(e['name'])}(?![\w-])", rows[module]), (kind, e["name"], module)


def test_the_name_index_is_what_the_family_modules_register():
    registry.load_all()
    for table, alias_table, homes in ((registry.TOOL, registry._ALIAS_TOOL, registry._TOOL_HOMES),
                                      (registry.REASONING, registry._ALIAS_REASONING, registry._REASONING_HOMES)):
        registered = {name: e.cls.__module__.rsplit(".", 1)[-1] for name, e in table.items()}
        registered |= {alias: registered[name] for alias, name in alias_table.items()}
        indexed = {name: module for module, names in homes.items() for name in names.split()}
        assert indexed == registered


def test_looking_up_the_served_parsers_imports_only_their_families():
    code = (
        "import sys\n"
        "from tokenbridge.parsers import registry\n"
        "assert registry.get_tool_parser('qwen2.5') is registry.get_tool_parser('hermes')\n"
        "assert registry.canonical_reasoning_name('qwen3') == 'qwen3'\n"
        "print(sorted(m.rsplit('.', 1)[-1] for m in sys.modules if m.startswith('tokenbridge.parsers.families.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['hermes',", "'qwen']"]
