"""The harness of the hand-written vLLM tool parsers decided on the hold-then-decide shell
(step3, hy_v3, hy_v4, poolside_v1, k2_horizon, minicpm5): each family's test module declares
its cases and vLLM's recorded answers, and takes the shared checks from ``vllm_tests``."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS
from feeding import feed
from tokenbridge.derender.parsing import ChoiceParser
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import Delta, ParseContext
from tokenbridge.parsers.output import OutputParser

SYNTH = MODELS / "synthetic-families"


@lru_cache(maxsize=None)
def vocab(token_suffix: str | None = None) -> HFTokenizer:
    """The real synthetic tokenizer; Hunyuan V3 reads ``token_suffix`` from its config."""
    config = json.loads((SYNTH / "tokenizer_config.json").read_text())
    if token_suffix is not None:
        config["token_suffix"] = token_suffix
    return HFTokenizer(SYNTH, config)


TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
        "scale": {"type": "number"}, "tags": {"type": "array"}, "opts": {"type": "object"},
        "note": {"type": ["string", "null"]}, "mode": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
        "q": {"type": "string"}, "limit": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}},
]
TELECOM = [
    {"type": "function", "function": {"name": "get_customer_by_phone", "parameters": {"type": "object",
        "properties": {"phone_number": {"type": "string"}}, "required": ["phone_number"]}}},
    {"type": "function", "function": {"name": "toggle_roaming", "parameters": {"type": "object",
        "properties": {"line_id": {"type": "string"}, "enabled": {"type": "boolean"}}}}},
]



class Cases(dict):
    """Case name -> the parser, the output text and the request's settings."""

    def add(self, name, parser, text, **kw):
        self[name] = {"parser": parser, "text": text, "tools": kw.pop("tools", TOOLS), **kw}


def make_parser(case: dict) -> ChoiceParser:
    cls = registry.get_tool_parser(case["parser"])
    ctx = ParseContext(
        tools=case.get("tools"),
        tool_choice=case.get("tool_choice", "auto"),
        chat_template_kwargs=case.get("kwargs") or {},
        vocab=vocab(case.get("token_suffix")),
        reasoning_parser="k2_horizon" if case.get("legacy_reasoning") else None,
    )
    engine = cls.engine_based and not case.get("legacy_reasoning")
    return ChoiceParser(OutputParser(ctx, None, cls(ctx)), False, True, engine=engine)


def answer(case: dict, pieces: list[str] | None = None, restore: bool = False):
    """Final ``(content, [(name, arguments)])`` after feeding ``pieces`` (default: one piece)."""
    fed = feed(lambda: make_parser(case), pieces if pieces is not None else [case["text"]], restore)
    return fed.message()[1], [tuple(c) for c in fed.named_calls()]


def vllm_tests(cases: Cases, expected: dict, examples: int):
    """The checks every family runs over its cases: vLLM's one-shot answer, and the same
    answer for every chunking (random, and one character at a time) through snapshot/restore."""

    @pytest.mark.parametrize("name", list(expected))
    def test_one_shot_matches_vllm(name):
        content, calls = expected[name]
        assert answer(cases[name]) == (content, list(calls))

    def test_every_case_has_an_expectation():
        assert set(cases) == set(expected)

    @settings(max_examples=examples, deadline=None)
    @given(st.data())
    def test_chunking_with_snapshot_restore_accumulates_to_one_shot(data):
        name = data.draw(st.sampled_from(sorted(cases)))
        case = cases[name]
        text = case["text"]
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        restore = data.draw(st.booleans())
        assert answer(case, pieces, restore=restore) == answer(case)

    @pytest.mark.parametrize("name", sorted(cases))
    def test_char_by_char_with_restore(name):
        case = cases[name]
        assert answer(case, list(case["text"]), restore=True) == answer(case)

    return (test_one_shot_matches_vllm, test_every_case_has_an_expectation,
            test_chunking_with_snapshot_restore_accumulates_to_one_shot, test_char_by_char_with_restore)


def feed_all(parser_name: str, pieces: list[str], **ctx_kw) -> list[Delta]:
    cls = registry.get_tool_parser(parser_name)
    p = cls(ParseContext(tools=TOOLS, tool_choice="auto", vocab=vocab(), **ctx_kw))
    return [p.feed(piece, []) for piece in pieces] + [p.finish()]  # the deltas themselves, one per step


def class_flags_test(rows: list[tuple[str, bool, bool]]):
    """``(parser, supports required/named, engine-based)`` as vLLM's classes declare them."""

    @pytest.mark.parametrize("parser, required_and_named, engine", rows)
    def test_class_flags_follow_vllm(parser, required_and_named, engine):
        cls = registry.get_tool_parser(parser)
        assert cls.supports_required_and_named is required_and_named
        assert cls.engine_based is engine

    return test_class_flags_follow_vllm


def content_first_test(rows: list[tuple[str, str, str]]):
    """``(parser, content, call)``: the content before a call streams before the call ends."""

    @pytest.mark.parametrize("parser, before, call", rows)
    def test_content_before_the_call_streams_before_the_end(parser, before, call):
        deltas = feed_all(parser, [before, call[:5], call[5:]])
        assert deltas[0].content == before
        assert not deltas[1].content
        assert sum(len(d.tool_calls) for d in deltas) == 1

    return test_content_before_the_call_streams_before_the_end
