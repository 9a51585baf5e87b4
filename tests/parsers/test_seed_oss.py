"""Seed-OSS (``families/seed_oss.py``): reasoning against vLLM 0.33's non-streaming ``extract_reasoning``.

Known gaps: none known.
"""

from __future__ import annotations

from feeding import ctx, parse


def test_seed_oss_reasoning():
    c = ctx("qwen3")
    assert parse("seed_oss", "a</seed:think>b", c) == ("a", "b")
    assert parse("seed_oss", "a<seed:tool_call>x", c) == ("a", "<seed:tool_call>x")
