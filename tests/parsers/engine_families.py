"""The harness of the declarative-engine tool families' tests (minimax, plamo3, inkling): one tool
list, the qwen3 vocabulary, a feeding helper, and the checks every such family passes."""

from __future__ import annotations

import json

from conftest import MODELS
from feeding import run_tools
from hypothesis import strategies as st
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry

QWEN3 = MODELS / "qwen3"
VOCAB = HFTokenizer(QWEN3, json.loads((QWEN3 / "tokenizer_config.json").read_text()))
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}},
]


def run(name: str, pieces: list[str], restore: bool = False, vocab=None, **kw):
    return run_tools(name, pieces, TOOLS, restore, vocab, **kw)


def one(name: str, text: str, **kw):
    return run(name, [text], **kw)


def assert_engine_based(names: tuple[str, ...]) -> None:
    for name in names:
        cls = registry.get_tool_parser(name)
        assert cls is not None and cls.engine_based and not cls.supports_required_and_named


def assert_random_chunking_is_one_shot(data, cases) -> None:
    """One of ``cases`` cut at random points, fed with or without restores, under either
    tool_choice (and, for plamo3, with or without its token ids) adds up to the one-shot answer."""
    name, text, _, _ = data.draw(st.sampled_from(cases))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    restore = data.draw(st.booleans())
    choice = data.draw(st.sampled_from(["auto", "none"]))
    vocab = VOCAB if name == "plamo3" and data.draw(st.booleans()) else None
    assert run(name, pieces, restore=restore, tool_choice=choice, vocab=vocab) == one(
        name, text, tool_choice=choice, vocab=vocab)
