"""The registry: every vLLM 0.33 parser name resolves, aliases are unique, and every
registered parser takes plain text without raising."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import SHARED
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

VLLM_NAMES = json.loads((SHARED / "docs" / "parser-names.json").read_text())


def test_parsers_json_lists_every_vllm_name():
    out = subprocess.run(
        [sys.executable, "-m", "tokenbridge.cli", "parsers", "--json"], capture_output=True, text=True, check=True
    )
    doc = json.loads(out.stdout)
    for kind in ("tool", "reasoning"):
        listed = {e["name"] for e in doc[kind]} | {a for e in doc[kind] for a in e["aliases"]}
        assert set(VLLM_NAMES[kind]) <= listed, sorted(set(VLLM_NAMES[kind]) - listed)


@pytest.mark.parametrize("name", registry.tool_names())
def test_tool_parser_accepts_plain_text(name):
    ctx = ParseContext(tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}], tool_choice="auto")
    parser = registry.get_tool_parser(name)(ctx)
    parser.feed("Hello, plain answer.", [])
    parser.finish()


@pytest.mark.parametrize("name", registry.reasoning_names())
def test_reasoning_parser_accepts_plain_text(name):
    parser = registry.get_reasoning_parser(name)(ParseContext())
    parser.feed("Hello, plain answer.", [])
    parser.finish()
