"""Mistral (``families/mistral.py``): pre-v11 ``[TOOL_CALLS]`` JSON arrays and v11+
``[TOOL_CALLS]name[ARGS]{…}`` calls against vLLM 0.33's rules, its reasoning against vLLM's
non-streaming ``parse()``, chunking invariance, and the incremental stream (at the end).

Known gaps:
- v11+ tokenizers stream calls whole (decided by the hold-then-decide shell), pre-v11 ones
  incrementally;
- the ``mistral-common`` tokenizer mode is a render-side extra (``tests/render/test_mistral_mode.py``).
"""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer

from feeding import SHARED_MARKERS, feed, marker_vocab, parse, parser_cls, split
from incremental import CTX, OBJECTS, WS, incremental, whole
from json_families import SYNTH, TOOLS, one, run

from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import json_string

W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
S = '{"name": "search", "arguments": {"q": "東京 🚀"}}'

CASES = [
    ("Bonjour.", "Bonjour.", []),
    (f"[TOOL_CALLS] [{W}]", "", [("get_weather", '{"city": "Paris"}')]),
    (f"Voilà: [TOOL_CALLS][{W}, {S}] trailing", "Voilà: ",
     [("get_weather", '{"city": "Paris"}'), ("search", '{"q": "東京 🚀"}')]),
    (f"[TOOL_CALLS]{W}", "", [("get_weather", '{"city": "Paris"}')]),  # bare object
    (f"[TOOL_CALLS][TOOL_CALLS] [{W}]", "", [("get_weather", '{"city": "Paris"}')]),
    ('Hi [TOOL_CALLS] [{"name":"f","arguments":{"a":"\\u00e9"', '[{"name":"f","arguments":{"a":"\\u00e9"', []),
    ('  [TOOL_CALLS] [{"name":"f"}]', "", [("f", "{}")]),
    ('[TOOL_CALLS] [{"name": 1, "arguments": "raw"}]', "", [("", "raw")]),
    ('[TOOL_CALLS] [1, {"x": 2}]', "[1, {\"x\": 2}]", []),
    ("[TOOL_CALLS]", "", []),
    ('[TOOL_CALLS] junk [{"name":"f","arguments":{}}] more', "", [("f", "{}")]),
]


@pytest.mark.parametrize("text,content,calls", CASES)
def test_mistral(text, content, calls):
    assert run("mistral", [text]) == (content, calls)


def test_mistral_required_bare_array():
    assert run("mistral", [f"[{W}]"], tool_choice="required") == ("", [("get_weather", '{"city": "Paris"}')])
    assert run("mistral", [f"[{W}]"]) == (f"[{W}]", [])


def test_mistral_ids():
    from tokenbridge.parsers import registry
    from tokenbridge.parsers.base import ParseContext

    p = registry.get_tool_parser("mistral")(ParseContext(tools=TOOLS, tool_choice="auto"))
    p.feed(f"[TOOL_CALLS] [{W}, {S}]", [])
    ids = [t.id for t in p.finish().tool_calls]
    assert all(len(i) == 9 and i.isalnum() for i in ids) and ids[0] != ids[1]


@settings(max_examples=40, deadline=None)
@given(text=st.sampled_from([c[0] for c in CASES]), cuts=st.lists(st.integers(0, 120), max_size=8),
       restore=st.booleans())
def test_chunking_invariance(text, cuts, restore):
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
    assert run("mistral", pieces, restore=restore) == run("mistral", [text])


# -- reasoning: vLLM 0.33's non-streaming ``parse()`` of the parser the serving layer composes,
# on Qwen3's real tokenizer with the family's markers added as special tokens -------------------

MISTRAL_V13 = SHARED_MARKERS  # the vocabulary vLLM's answers were recorded with
MISTRAL_V11 = ("[TOOL_CALLS]", "[ARGS]")  # a grammar-capable tekken tokenizer
#: No ``[THINK]`` nor ``[ARGS]``: a pre-v11 tokenizer, Qwen3's own vocabulary serves.
MISTRAL_OLD = ()


def reasoning_ctx(v, kwargs=None, prompt=None) -> ParseContext:
    return ParseContext(tool_choice="none", chat_template_kwargs=kwargs or {}, prompt_token_ids=prompt or [], vocab=v)


REASONING_CASES = [
    # (vocabulary, text, (reasoning, content))
    # (name, vocabulary, chat_template_kwargs, tools, text, (reasoning, content))
    (MISTRAL_V13, '[THINK]Let me think \n[/THINK]The answer.', ('Let me think', 'The answer.')),
    (MISTRAL_V13, 'Hello, no reasoning.', (None, 'Hello, no reasoning.')),
    (MISTRAL_V13, '[THINK]cut by length', ('cut by length', None)),
    (MISTRAL_V13, '[THINK]a[TOOL_CALLS]get{"x": 1}', ('a', '[TOOL_CALLS]get{"x": 1}')),
    (MISTRAL_V13, 'pre[THINK]r[/THINK]post[/THINK]x[THINK]again', ('ragain', 'prepostx')),
    (MISTRAL_V13, '[THINK]日本 é😀[/THINK]中文', ('日本 é😀', '中文')),
    (MISTRAL_V13, '', (None, None)),
    (MISTRAL_V11, '<think>r \n</think>c', ('r', 'c')),
    (MISTRAL_V11, '<think>r[TOOL_CALLS]f{}', ('r', '[TOOL_CALLS]f{}')),
    (MISTRAL_V11, '[THINK]stays text</think>x', (None, '[THINK]stays textx')),
    (MISTRAL_OLD, '[THINK]a[/THINK]b', (None, '[THINK]a[/THINK]b')),
    (MISTRAL_OLD, '', (None, '')),
]


@pytest.mark.parametrize("tokens,text,expected", REASONING_CASES)
def test_reasoning_one_shot_matches_vllm(tokens, text, expected):
    assert parse("mistral", text, reasoning_ctx(marker_vocab(tokens))) == expected


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(REASONING_CASES), cuts=st.lists(st.integers(0, 120), max_size=8))
def test_reasoning_any_chunking_accumulates_to_one_shot(case, cuts):
    tokens, text, expected = case
    assert parse("mistral", text, reasoning_ctx(marker_vocab(tokens)), split(text, cuts)) == expected



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
def test_reasoning_random_chunking(parts, tokens, data):
    text = "".join(parts)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=5))
    c = reasoning_ctx(marker_vocab(tokens))
    assert parse("mistral", text, c, split(text, cuts)) == parse("mistral", text, c)


@pytest.mark.parametrize("tokens,prompt,ended", [
    (MISTRAL_V13, "[THINK]x[/THINK]", True),
    (MISTRAL_V13, "a[/THINK]b[THINK]", False),
    (MISTRAL_V13, "hello", False),  # waits for reasoning
    (MISTRAL_OLD, "hello", True),  # no reasoning at all
])
def test_markers_in_prompt(tokens, prompt, ended):
    v = marker_vocab(tokens)
    ids = v.encode(prompt)
    assert parser_cls("mistral").reasoning_ended_in_prompt(ids, reasoning_ctx(v, prompt=ids)) is ended


# ── Mistral v11+ ([ARGS] token) ───────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def v11_vocab(tmp_path_factory):
    """The synthetic tokenizer plus Mistral's v11 control tokens (a real tokenizers tokenizer)."""
    folder = tmp_path_factory.mktemp("mistral-v11")
    tok = Tokenizer.from_file(str(SYNTH / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True) for t in ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]")])
    tok.save(str(folder / "tokenizer.json"))
    config = json.loads((SYNTH / "tokenizer_config.json").read_text())
    config["additional_special_tokens"] = ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "</s>"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    vocab = HFTokenizer(folder, config)
    yield vocab
    shutil.rmtree(folder, ignore_errors=True)


MW = '{"city": "Paris"}'
MISTRAL_V11 = [
    ("Bonjour.", "Bonjour.", []),
    (f"Hi [TOOL_CALLS]get_weather[ARGS]{MW}", "Hi", [("get_weather", MW)]),
    (f'[TOOL_CALLS]get_weather[ARGS]{MW}[TOOL_CALLS]search[ARGS]{{"q": "東京 🚀"}}', "",
     [("get_weather", MW), ("search", '{"q": "東京 🚀"}')]),
    (f"[TOOL_CALLS]get_weather{MW}", "", [("get_weather", MW)]),
    (f"[TOOL_CALLS]get_weather[ARGS]{MW} trailing text", "", [("get_weather", MW)]),
    ('[TOOL_CALLS]get_weather[ARGS]{"city": "Par', "", [("get_weather", '{"city": "Par')]),
    ("[TOOL_CALLS]get_weather[ARGS]", "", [("get_weather", "{}")]),
    ("[TOOL_CALLS]get_weather", "", [("get_weather", "{}")]),
    ('[TOOL_CALLS]unknown_fn[ARGS]{"a": 1}', "", [("unknown_fn", '{"a": 1}')]),
    (f"  \n[TOOL_CALLS]get_weather[ARGS]{MW}", "", [("get_weather", MW)]),
    ('[TOOL_CALLS] get_weather [ARGS] {"city": "Paris", "days": "3"}', "",
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    (f"[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{MW}", "", [("get_weatherabc123XYZ", MW)]),
    ("a</s>b", "ab", []),
    ('[TOOL_CALLS][ARGS]{"a": 1}', "", [("", '{"a": 1}')]),
    ("[TOOL_CALLS]get_weather[ARGS]not json", "", [("get_weather", "not json")]),
    (f"x [TOOL_CALLS]get_weather[ARGS]{MW}[TOOL_CALLS]bogus[ARGS]{{}}", "x",
     [("get_weather", MW), ("bogus", "{}")]),
    ('pre {"a": 1} [TOOL_CALLS]search[ARGS]{"q": 1}', 'pre {"a": 1}', [("search", '{"q": "1"}')]),
    (f"[TOOL_CALLS]get_we{{ather[ARGS]{MW}", "", [("get_we", f"{{ather[ARGS]{MW}")]),
    (f"[TOOL_CALLS][TOOL_CALLS]get_weather[ARGS]{MW}", "", [("[TOOL_CALLS]get_weather", MW)]),
    ("a [ARGS] b", "a [ARGS] b", []),
    ("[TOOL_CALLS]  ", "", [("", "{}")]),
    ("[TOOL_CALLS]", "", []),
    ("[TOOL_CALLS]get_</s>weather[ARGS]{\"city\": \"P</s>aris\"}", "", [("get_weather", MW)]),
    ('[TOOL_CALLS]search[ARGS]{"q": "a"}{"q": "b"}', "", [("search", '{"q": "a"}')]),
]


def run_v11(vocab, pieces, tool_choice="auto", restore=False):
    return run("mistral", pieces, tool_choice=tool_choice, restore=restore, vocab=vocab)


@pytest.mark.parametrize("text,content,calls", MISTRAL_V11)
def test_mistral_v11(v11_vocab, text, content, calls):
    assert run_v11(v11_vocab, [text]) == (content, calls)


def test_mistral_v11_tool_choice_none(v11_vocab):
    text = f"x [TOOL_CALLS]get_weather[ARGS]{MW} tail"
    assert run_v11(v11_vocab, [text], tool_choice="none") == ("x ", [])


def test_mistral_older_format_unchanged_without_args_token():
    assert one("mistral", f"[TOOL_CALLS]get_weather[ARGS]{MW}") == ("get_weather[ARGS]" + MW, [])


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(MISTRAL_V11), cuts=st.lists(st.integers(0, 90), max_size=6), restore=st.booleans())
def test_mistral_v11_chunking(v11_vocab, case, cuts, restore):
    text = case[0]
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
    assert run_v11(v11_vocab, pieces, restore=restore) == run_v11(v11_vocab, [text])


def test_flags():
    assert registry.get_tool_parser("mistral").supports_required_and_named is False
    assert registry.get_tool_parser("mistral").engine_based is True


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@st.composite
def mistral_output(draw) -> str:
    entries = []
    for _ in range(draw(st.integers(1, 3))):
        members = [f'"name":{draw(WS)}{draw(json_string())}']
        if draw(st.integers(0, 4)):
            members.append(f'"arguments"{draw(WS)}:{draw(WS)}{draw(st.one_of(OBJECTS, json_string()))}')
        if draw(st.booleans()):
            members.reverse()
        entries.append("{" + draw(WS) + ("," + draw(WS)).join(members) + draw(WS) + "}")
    calls = entries[0] if len(entries) == 1 and draw(st.booleans()) else "[" + ("," + draw(WS)).join(entries) + "]"
    head = draw(st.sampled_from(["", "Voilà: ", "日本 😀"]))
    return f"{head}[TOOL_CALLS]{draw(WS)}{calls}{draw(st.sampled_from(['', ' trailing', '</s>']))}"


@settings(max_examples=200, deadline=None)
@given(mistral_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_mistral_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("mistral", text)
    got = incremental("mistral", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    one_by_one = incremental("mistral", list(text), restore=False)
    assert (one_by_one.content, one_by_one.named_calls()) == (got.content, got.named_calls())
    assert all(call_id and len(call_id) == 9 for call_id, _, _ in got.calls)


@pytest.mark.parametrize("text, content, calls", [
    # a forced choice: the text may be the calls, or content up to the marker
    ('[{"name": "f", "arguments": {"a": 1}}]', "", [("f", '{"a": 1}')]),
    (' Sure. [TOOL_CALLS][{"name": "f", "arguments": {}}]', " Sure. ", [("f", "{}")]),
])
def test_mistral_forced_choice(text, content, calls):
    ctx = ParseContext(tools=CTX.tools, tool_choice="required")
    for pieces in ([text], list(text)):
        got = feed(lambda: registry.get_tool_parser("mistral").incremental(ctx), pieces, restore=True)
        assert (got.content, got.named_calls()) == (content, calls)
