"""MiMo (``families/mimo.py``): reasoning against vLLM 0.33's non-streaming ``extract_reasoning``.

Known gaps: none known.
"""

from __future__ import annotations

from feeding import ctx, parse


def test_mimo_reasoning():
    c = ctx("qwen3")
    assert parse("mimo", "a</think>b", c) == ("a", "b")
