"""The harness of the marker + JSON-body and other held tool-call families' tests: one tool
list and the synthetic-families tokenizer, a feeding helper, and the checks every family
module runs over its vLLM-recorded rows (``family_tests``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS
from feeding import feed
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}},
]
SYNTH = MODELS / "synthetic-families"
VOCAB = HFTokenizer(SYNTH, json.loads((SYNTH / "tokenizer_config.json").read_text()))


def run(parser_name: str, pieces: list[str], tool_choice="auto", tools=TOOLS, restore=False, vocab=None):
    """Feed pieces (optionally through snapshot/restore between pieces); accumulate. ``vocab``:
    another tokenizer than the synthetic one."""
    ctx = ParseContext(tools=tools, tool_choice=tool_choice, vocab=vocab or VOCAB)
    fed = feed(lambda: registry.get_tool_parser(parser_name)(ctx), pieces, restore)
    return fed.content, fed.named_calls()


def one(parser_name: str, text: str, **kw):
    return run(parser_name, [text], **kw)


def call_ids(name: str, text: str) -> list[str | None]:
    """The ids the parser ``name`` gives the calls of ``text`` (None: derender assigns one)."""
    p = registry.get_tool_parser(name)(ParseContext(tools=TOOLS, tool_choice="auto"))
    p.feed(text, [])
    return [t.id for t in p.finish().tool_calls]


def family_tests(cases: dict, examples: int, required_and_named: bool = True):
    """vLLM's one-shot answer for each ``(parser, text, content, calls)`` row, the class flags,
    and the same answer for every chunking through snapshot/restore."""

    @pytest.mark.parametrize(
        "parser,text,content,calls",
        [(p, t, c, calls) for p, rows in cases.items() for t, c, calls in rows],
    )
    def test_family(parser, text, content, calls):
        assert one(parser, text) == (content, calls)

    def test_flags():
        for name in cases:
            cls = registry.get_tool_parser(name)
            assert cls.supports_required_and_named is required_and_named and cls.engine_based is False

    every = [(p, t) for p, rows in cases.items() for t, _, _ in rows]

    @settings(max_examples=examples, deadline=None)
    @given(case=st.sampled_from(every), cuts=st.lists(st.integers(0, 160), max_size=8), restore=st.booleans())
    def test_chunking_invariance(case, cuts, restore):
        name, text = case
        bounds = sorted({min(c, len(text)) for c in cuts})
        pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
        assert run(name, pieces, restore=restore) == one(name, text)

    return test_family, test_flags, test_chunking_invariance


def chunking_test(pairs: list[tuple[str, str]], examples: int):
    """Every chunking of each ``(parser, text)`` through snapshot/restore gives its one-shot answer."""

    @settings(max_examples=examples, deadline=None)
    @given(case=st.sampled_from(pairs), cuts=st.lists(st.integers(0, 200), max_size=8), restore=st.booleans())
    def test_chunking_invariance(case, cuts, restore):
        name, text = case
        bounds = sorted({min(c, len(text)) for c in cuts})
        pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
        assert run(name, pieces, restore=restore) == one(name, text)

    return test_chunking_invariance
