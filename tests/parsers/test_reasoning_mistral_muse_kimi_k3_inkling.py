"""Reasoning of Mistral, Muse (Spark, Glimmer), Kimi K3, Inkling.

Expected values are vLLM 0.33's non-streaming ``parse()`` reasoning/content of the parser the
serving layer composes for each name (``DelegatingParser`` or ``KimiK3Parser``), produced by
running the installed vLLM on the same texts. The marker tokens of these families are not in
the shared tokenizers, so each test vocabulary is Qwen3's real tokenizer with the family's
markers added as special tokens (Mistral v11 stands for a grammar-capable tekken tokenizer).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer

from tests.parsers.test_reasoning import MODELS, parse, parser_cls, vocab
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.families.inkling import MARKERS as INKLING_MARKERS

#: One vocabulary holds the Mistral v13, Muse, Kimi K3 and Inkling markers (loading is slow).
MISTRAL_V13 = MUSE = KIMI_K3 = INKLING = (
    *("[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]"),
    *("<|start|>", "<|message|>", "<|eom|>", "<|eot|>"),
    *("<|open|>", "<|close|>", "<|sep|>"),
    *INKLING_MARKERS,
)
MISTRAL_V11 = ("[TOOL_CALLS]", "[ARGS]")
#: No ``[THINK]`` nor ``[ARGS]``: a pre-v11 tokenizer, Qwen3's own vocabulary serves.
MISTRAL_OLD = ()
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


@lru_cache(maxsize=None)
def vocab_with(tokens: tuple[str, ...], root: str) -> HFTokenizer:
    """Qwen3's tokenizer with ``tokens`` added as special tokens, saved under ``root``."""
    if not tokens:
        return vocab("qwen3")
    folder = Path(root) / f"vocab{len(list(Path(root).iterdir()))}"
    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.from_file(str(MODELS / "qwen3" / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in tokens])
    tok.save(str(folder / "tokenizer.json"))
    config = json.loads((MODELS / "qwen3" / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder", None)
    return HFTokenizer(folder, config)


@pytest.fixture(scope="module")
def vocabs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("vocab"))
    return lambda tokens: vocab_with(tokens, root)


def ctx(v, kwargs=None, tools=None, prompt=None) -> ParseContext:
    return ParseContext(
        tools=tools,
        tool_choice="auto" if tools else "none",
        chat_template_kwargs=kwargs or {},
        prompt_token_ids=prompt or [],
        vocab=v,
    )


CASES = [
    # (name, vocabulary, chat_template_kwargs, tools, text, (reasoning, content))
    ('mistral', MISTRAL_V13, {}, None, '[THINK]Let me think \n[/THINK]The answer.', ('Let me think', 'The answer.')),
    ('mistral', MISTRAL_V13, {}, None, 'Hello, no reasoning.', (None, 'Hello, no reasoning.')),
    ('mistral', MISTRAL_V13, {}, None, '[THINK]cut by length', ('cut by length', None)),
    ('mistral', MISTRAL_V13, {}, None, '[THINK]a[TOOL_CALLS]get{"x": 1}', ('a', '[TOOL_CALLS]get{"x": 1}')),
    ('mistral', MISTRAL_V13, {}, None, 'pre[THINK]r[/THINK]post[/THINK]x[THINK]again', ('ragain', 'prepostx')),
    ('mistral', MISTRAL_V13, {}, None, '[THINK]日本 é😀[/THINK]中文', ('日本 é😀', '中文')),
    ('mistral', MISTRAL_V13, {}, None, '', (None, None)),
    ('mistral', MISTRAL_V11, {}, None, '<think>r \n</think>c', ('r', 'c')),
    ('mistral', MISTRAL_V11, {}, None, '<think>r[TOOL_CALLS]f{}', ('r', '[TOOL_CALLS]f{}')),
    ('mistral', MISTRAL_V11, {}, None, '[THINK]stays text</think>x', (None, '[THINK]stays textx')),
    ('mistral', MISTRAL_OLD, {}, None, '[THINK]a[/THINK]b', (None, '[THINK]a[/THINK]b')),
    ('mistral', MISTRAL_OLD, {}, None, '', (None, '')),
    ('muse', MUSE, {}, None, 'to=self<|message|>think<|eom|>to=user<|message|>answer<|eot|>', ('think', 'answer')),
    ('muse', MUSE, {}, None, '<|message|>bare thought<|eom|><|start|>assistant to=commentary<|message|>c1<|eom|>', ('bare thought', 'c1')),
    ('muse', MUSE, {}, None, 'to=self<|message|>cut by length', ('cut by length', None)),
    ('muse', MUSE, {}, None, 'to=self<|message|>r<|eom|>to=fn<|message|><atem:function_calls><atem:invoke name="f"><|eom|>', ('r', 'to=fn<|message|><atem:function_calls><atem:invoke name="f"><|eom|>')),
    ('muse', MUSE, {}, None, 'to=self<|message|>mentions <atem:invoke inside<|eom|>to=user<|message|>ok', ('mentions <atem:invoke inside', 'ok')),
    ('muse', MUSE, {}, None, 'plain text only', (None, 'plain text only')),
    ('muse', MUSE, {}, None, 'to=self<|message|>日本<|eom|>to=user<|message|>é😀', ('日本', 'é😀')),
    ('muse', MUSE, {}, None, 'to=developer<|message|>dev<|eom|>to=user<|message|>hi', (None, 'hi')),
    ('muse_glimmer', MUSE, {}, None, 'to=self<|message|>a<|eom|>x to=self<|message|>b<|eom|>to=user<|message|>answer<|eot|>', ('a\nb', 'answer')),
    ('muse_glimmer', MUSE, {}, None, 'to=self<|message|>cut by length', ('cut by length', None)),
    ('muse_glimmer', MUSE, {}, None, 'to=self<|message|>r<|eom|>to=fn<|message|><atem:function_calls>x', ('r', 'to=fn<|message|><atem:function_calls>x')),
    ('muse_glimmer', MUSE, {}, None, 'to=self<|message|>mentions <atem:invoke<|eom|>to=user<|message|>ok', ('mentions <atem:invoke', 'ok')),
    ('muse_glimmer', MUSE, {}, None, 'plain text only', (None, 'plain text only')),
    ('muse_glimmer', MUSE, {}, None, 'to=self<|message|>日本<|eom|>to=user<|message|>é😀', ('日本', 'é😀')),
    ('muse_glimmer', MUSE, {}, None, 'to=self<|message|>open to=user<|message|>c', ('open ', 'c')),
    ('kimi_k3', KIMI_K3, {}, None, '<|open|>think<|sep|>r<|close|>think<|sep|><|open|>response<|sep|>c<|close|>response<|sep|><|close|>message<|sep|>', ('r', 'c')),
    ('kimi_k3', KIMI_K3, {}, None, 'r<|close|>think<|sep|>c', ('r', 'c')),
    ('kimi_k3', KIMI_K3, {}, None, 'cut by length', ('cut by length', None)),
    ('kimi_k3', KIMI_K3, {}, None, '<|open|>response<|sep|>only content', (None, 'only content')),
    ('kimi_k3', KIMI_K3, {}, TOOLS, '<|open|>think<|sep|>r<|close|>think<|sep|><|open|>response<|sep|>c<|close|>response<|sep|><|open|>tools<|sep|>x', ('r', '<|open|>response<|sep|>c<|close|>response<|sep|><|open|>tools<|sep|>x')),
    ('kimi_k3', KIMI_K3, {'thinking': False}, None, '<|open|>think<|sep|>r<|close|>think<|sep|><|open|>response<|sep|>c<|close|>response<|sep|>', (None, 'c')),
    ('kimi_k3', KIMI_K3, {}, None, '<|open|>think<|sep|>日本<|close|>think<|sep|>é😀', ('日本', 'é😀')),
    ('kimi_k3', KIMI_K3, {}, None, '<|open|> think <|sep|>r<|close|> think <|sep|>c', ('r', 'c')),
    ('inkling', INKLING, {}, None, '<|message_model|><|content_thinking|>Let me think \n<|end_message|><|message_model|><|content_text|>The answer.<|end_message|>', ('Let me think', 'The answer.')),
    ('inkling', INKLING, {}, None, '<|message_model|><|content_thinking|>cut by length', ('cut by length', None)),
    ('inkling', INKLING, {}, None, 'plain text', (None, 'plain text')),
    ('inkling', INKLING, {}, None, '<|message_model|><|content_thinking|>r<|content_invoke_tool_json|>{"name":"f","args":{"x":1}}<|end_message|>', ('r', '<|content_invoke_tool_json|>{"name":"f","args":{"x":1}}<|end_message|>')),
    ('inkling', INKLING, {}, None, '<|message_model|>header<|end_message|>q', (None, 'headerq')),
    ('inkling', INKLING, {}, None, 'x<|content_thinking|>r<|end_message|>y', ('r', 'y')),
    ('inkling', INKLING, {}, None, '<|message_model|><|content_thinking|>a <|end_message|><|message_model|><|content_thinking|>b<|content_model_end_sampling|>', ('a b', None)),
    ('inkling', INKLING, {}, None, '<|message_model|><|content_thinking|>日本<|end_message|><|message_model|><|content_text|>é😀<|end_message|>', ('日本', 'é😀')),
    ('inkling', INKLING, {}, None, '<|message_model|><|content_thinking|>r<|message_model|><|content_text|>t', ('r<|message_model|><|content_text|>t', None)),
    ('inkling', INKLING, {}, None, '', (None, None)),
]


@pytest.mark.parametrize("name,tokens,kwargs,tools,text,expected", CASES)
def test_one_shot_matches_vllm(vocabs, name, tokens, kwargs, tools, text, expected):
    assert parse(name, text, ctx(vocabs(tokens), kwargs, tools)) == expected


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 120), max_size=8))
def test_any_chunking_accumulates_to_one_shot(vocabs, case, cuts):
    name, tokens, kwargs, tools, text, expected = case
    pts = sorted({min(x, len(text)) for x in cuts})
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    assert parse(name, text, ctx(vocabs(tokens), kwargs, tools), chunks) == expected


INKLING_PIECES = [*INKLING_MARKERS, "a", " ", "\n", "日", "{}", "<|im_end|>"]


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.sampled_from(INKLING_PIECES), max_size=12), data=st.data())
def test_inkling_random_chunking(vocabs, parts, data):
    text = "".join(parts)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=5))
    pts = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    c = ctx(vocabs(INKLING))
    assert parse("inkling", text, c, chunks) == parse("inkling", text, c)


MISTRAL_PIECES = [
    *("[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]", "{", "a", " ", "\n", "日"),
    *("<think>", "</think>", "<|im_end|>"),
]


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(st.sampled_from(MISTRAL_PIECES), max_size=12),
    tokens=st.sampled_from([MISTRAL_V13, MISTRAL_V11]),
    data=st.data(),
)
def test_mistral_random_chunking(vocabs, parts, tokens, data):
    text = "".join(parts)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=5))
    pts = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    c = ctx(vocabs(tokens))
    assert parse("mistral", text, c, chunks) == parse("mistral", text, c)


@pytest.mark.parametrize(
    "name,tokens,kwargs,prompt,ended",
    [
        ("mistral", MISTRAL_V13, {}, "[THINK]x[/THINK]", True),
        ("mistral", MISTRAL_V13, {}, "a[/THINK]b[THINK]", False),
        ("mistral", MISTRAL_V13, {}, "hello", False),  # waits for reasoning
        ("mistral", MISTRAL_OLD, {}, "hello", True),  # no reasoning at all
        ("kimi_k3", KIMI_K3, {}, "<|open|>think<|sep|>", False),
        ("kimi_k3", KIMI_K3, {}, "<|open|>think<|sep|>x<|close|>think<|sep|>", True),
        ("kimi_k3", KIMI_K3, {}, "hello", False),
        ("kimi_k3", KIMI_K3, {"thinking": False}, "hello", True),
        ("inkling", INKLING, {}, "<|message_model|><|content_thinking|>", False),
        ("inkling", INKLING, {}, "<|content_text|>", True),
        ("inkling", INKLING, {}, "<|content_thinking|>x<|end_message|>", False),
        ("inkling", INKLING, {}, "hello", False),
        ("muse", MUSE, {}, "<|start|>assistant", False),
        ("muse", MUSE, {}, '<|start|>assistant to=fn<|message|><atem:invoke name="f">', True),
        ("muse_glimmer", MUSE, {}, "<|start|>assistant", False),
        ("muse_glimmer", MUSE, {}, "<|start|>assistant to=fn<|message|><atem:invoke>", True),
    ],
)
def test_markers_in_prompt(vocabs, name, tokens, kwargs, prompt, ended):
    v = vocabs(tokens)
    ids = v.encode(prompt)
    assert parser_cls(name).reasoning_ended_in_prompt(ids, ctx(v, kwargs, prompt=ids)) is ended


def test_aliases_resolve():
    assert parser_cls("musespark1x") is parser_cls("muse")
