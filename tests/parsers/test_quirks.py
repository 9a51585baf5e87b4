"""The vLLM quirks table: every quirk is applied somewhere that names it, and cites vLLM code."""

from __future__ import annotations

import re
from pathlib import Path

import tokenbridge
from tokenbridge.parsers.quirks import VLLM_QUIRKS

SRC = Path(tokenbridge.__file__).parent


def test_every_quirk_is_named_where_it_is_applied():
    text = "\n".join(p.read_text() for p in SRC.rglob("*.py") if p.name != "quirks.py")
    named = set(re.findall(r"quirk ([a-z_]+)", text))
    assert set(VLLM_QUIRKS) <= named, sorted(set(VLLM_QUIRKS) - named)


def test_every_quirk_cites_a_vllm_source_file_and_function():
    for key, (rule, source) in VLLM_QUIRKS.items():
        assert rule and re.fullmatch(r"[a-z_/0-9]+\.py [A-Za-z_.]+( \(.+\))?", source), key
