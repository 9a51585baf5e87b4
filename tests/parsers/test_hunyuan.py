"""Hunyuan (``families/hunyuan.py``): Hunyuan-A13B and Hunyuan V4 reasoning against vLLM 0.33's
non-streaming ``extract_reasoning`` (run on the installed vLLM, Hunyuan V4 with unsuffixed
``<think>`` tokens); hy_v3 and hy_v4 tool calls against vLLM's own classes on the same texts
(``held_block``) and hunyuan_a13b's against vLLM's ``extract_tool_calls`` (``json_families``);
chunking invariance for all.

Known gaps:
- hy_v3 and hy_v4 tool calls stream whole (no ``--tool-call-streaming incremental`` parser;
  hunyuan_a13b's incremental stream is tested at the end);
- Hunyuan keeps its own argument value conversion, because vLLM's parser converts differently
  (``engine/schema.py``).
"""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, parser_cls, split, vocab
from held_block import Cases, class_flags_test, content_first_test, feed_all, vllm_tests
from incremental import restored
from json_families import call_ids, family_tests
from reasoning_cases import reasoning_tests

from tokenbridge.parsers import registry

from parsers.engine.test_json_stream import JSON_TEXT, json_string

QWEN = "qwen3"  # a real tokenizer with ``<think>``/``</think>`` as tokens

REASONING_CASES = [
    # (name, chat_template_kwargs, vocab folder, text, (reasoning, content))
    ('hunyuan_a13b', {}, QWEN, '<think>\nr\n</think>\n<answer>\nc\n</answer>', ('r', 'c')),
    ('hunyuan_a13b', {}, QWEN, '<think>\nr\n</think>\n<answer>\nc\n</answer>tail', ('r', 'c')),
    ('hunyuan_a13b', {}, QWEN, '<think>\nr\n</think>\n<answer>\nc', ('r', 'c')),
    ('hunyuan_a13b', {}, QWEN, 'just text\n</answer>', (None, 'just text')),
    ('hunyuan_a13b', {}, QWEN, 'no markers', (None, 'no markers')),
    ('hunyuan_a13b', {}, QWEN, '<think>\ncut', (None, '<think>\ncut')),
    ('hunyuan_a13b', {}, QWEN, 'x<think>\nr\n</think>\n<answer>\nc', ('r', 'c')),
    ('hunyuan_a13b', {}, QWEN, '', (None, '')),
    ('hunyuan_a13b', {}, QWEN, '<think>\n日本\n</think>\n<answer>\né😀\n</answer>', ('日本', 'é😀')),
    ('hunyuan_a13b', {}, QWEN, '<think>\na\n</think>\n<answer>\nb\n</think>\n<answer>\nc\n</answer>', ('a', 'b\n</think>\n<answer>\nc')),
    ('hunyuan_a13b', {}, QWEN, '<think>\n\n</think>\n<answer>\n\n</answer>', (None, None)),
    ('hy_v4', {}, QWEN, 'r</think>c', ('r', 'c')),
    ('hy_v4', {}, QWEN, '<think>r</think>c', ('r', 'c')),
    ('hy_v4', {}, QWEN, 'cut', ('cut', None)),
    ('hy_v4', {}, QWEN, '', ('', None)),
    ('hy_v4', {}, QWEN, 'r</think>', ('r', None)),
    ('hy_v4', {}, QWEN, 'a<tool_calls>x</tool_calls></think>c', ('a<tool_calls>x</tool_calls>', 'c')),
    ('hy_v4', {}, QWEN, '日本</think>é😀', ('日本', 'é😀')),
    ('hy_v4', {"reasoning_effort": "no_think"}, QWEN, 'r</think>c', (None, 'r</think>c')),
    ('hy_v4', {"reasoning_effort": "no_think"}, QWEN, '', (None, '')),
]


TestReasoning = reasoning_tests(REASONING_CASES, ('hunyuan_a13b', 'hy_v4'), alphabet="<>/thinkaswer \n日",
                                switches=({},), folder=QWEN, max_cut=80, chunk_examples=150, random_examples=75)


def test_hy_v4_prompt_and_switch():
    v = vocab(QWEN)
    start, end = v.token_to_id("<think>"), v.token_to_id("</think>")
    cls = parser_cls("hy_v4")
    assert cls.reasoning_ended_in_prompt([start], ctx(QWEN)) is False
    assert cls.reasoning_ended_in_prompt([start, 5, end], ctx(QWEN)) is True
    assert cls.reasoning_ended_in_prompt([], ctx(QWEN, {"reasoning_effort": "no_think"})) is True
    assert parse("hy_v4", "a</think>b", ctx(QWEN, {"reasoning_effort": "low"})) == ("a", "b")


def test_hunyuan_a13b_prompt_never_ends_reasoning():
    assert parser_cls("hunyuan_a13b").reasoning_ended_in_prompt([1, 2, 3], ctx(QWEN)) is False


# -- hy_v3 / hy_v4 tool calls ------------------------------------------------------------------

CASES = Cases()
add = CASES.add

# ---- hy_v3
def h3(name, pairs, sfx="", sep=True):
    a = "".join(f"<arg_key{sfx}>{k}</arg_key{sfx}><arg_value{sfx}>{v}</arg_value{sfx}>" for k, v in pairs)
    return f"<tool_call{sfx}>{name}" + (f"<tool_sep{sfx}>" if sep else "") + a + f"</tool_call{sfx}>"
H = h3("get_weather", [("city", "Paris"), ("days", "3")])
add("hy_v3_single", "hy_v3", "<tool_calls>" + H + "</tool_calls>")
add("hy_v3_parallel", "hy_v3", "<tool_calls>\n" + H + "\n" + h3("search", [("q", " x "), ("limit", "07")]) + "\n</tool_calls>")
add("hy_v3_content_before", "hy_v3", "Let me look.\n<tool_calls>" + H + "</tool_calls>after")
add("hy_v3_types", "hy_v3", "<tool_calls>" + h3("get_weather", [("city", "1"), ("metric", "False"), ("scale", "5"), ("tags", "[1, 2]"), ("opts", "{'a': 1}"), ("note", "null"), ("mode", "12"), ("days", "1.5"), ("extra", "[3]")]) + "</tool_calls>")
add("hy_v3_missing_end", "hy_v3", "pre<tool_calls>" + H)
add("hy_v3_cut_mid_call", "hy_v3", "pre<tool_calls><tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_va")
add("hy_v3_cut_in_name", "hy_v3", "pre<tool_calls><tool_call>get_wea")
add("hy_v3_non_ascii", "hy_v3", "好的<tool_calls>" + h3("get_weather", [("city", "北京")]) + "</tool_calls>")
add("hy_v3_unknown_name", "hy_v3", "<tool_calls>" + h3("nope", [("a", "1")]) + "</tool_calls>")
add("hy_v3_call_before_block", "hy_v3", "x" + H + "y<tool_calls>z")
add("hy_v3_no_block", "hy_v3", "x" + H + "y")
add("hy_v3_suffix", "hy_v3", "hi<tool_calls:ab12>" + h3("search", [("q", "v")], sfx=":ab12") + "</tool_calls:ab12>",
    token_suffix=":ab12")
add("hy_v3_bad_schema_type", "hy_v3", "<tool_calls>" + h3("bad", [("a", "1")]) + "</tool_calls>",
    tools=[{"type": "function", "function": {"name": "bad", "parameters": {"type": "object", "properties": {"a": {"type": ["integer", 5]}}}}}])

# ---- hy_v4
def h4(name, pairs):
    return h3(name, pairs, sep=False)
H4 = h4("get_weather", [("city", "Paris"), ("days", "3")])
add("hy_v4_single", "hy_v4", "<tool_calls>" + H4 + "</tool_calls>")
add("hy_v4_parallel", "hy_v4", "<tool_calls>\n" + H4 + "\n" + h4("search", [("q", " x "), ("limit", "7")]) + "\n</tool_calls>")
add("hy_v4_content_before", "hy_v4", "Checking.\n<tool_calls>" + H4 + "</tool_calls>\ntrailing")
add("hy_v4_types", "hy_v4", "<tool_calls>" + h4("get_weather", [("city", "1"), ("metric", "true"), ("scale", "1e3"), ("opts", '{"a": 1}'), ("mode", "x")]) + "</tool_calls>")
add("hy_v4_missing_end", "hy_v4", "pre<tool_calls>" + H4)
add("hy_v4_cut_mid_call", "hy_v4", "pre<tool_calls><tool_call>get_weather<arg_key>ci")
add("hy_v4_non_ascii", "hy_v4", "好的<tool_calls>" + h4("get_weather", [("city", "Zürich ✓")]) + "</tool_calls>")
add("hy_v4_unknown_name", "hy_v4", "<tool_calls>" + h4("nope", [("a", "1")]) + "</tool_calls>")
add("hy_v4_stray_text", "hy_v4", "<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>A</arg_value>junk</tool_call></tool_calls>")
add("hy_v4_empty_name", "hy_v4", "<tool_calls><tool_call> </tool_call></tool_calls>")
add("hy_v4_no_args", "hy_v4", "<tool_calls><tool_call>ping</tool_call></tool_calls>")
add("hy_v4_end_before_start", "hy_v4", "a</tool_calls>b<tool_calls>" + H4 + "</tool_calls>")
add("hy_v4_ws_between_key_value", "hy_v4", "<tool_calls><tool_call>search<arg_key>q</arg_key> <arg_value>a</arg_value></tool_call></tool_calls>")
add("hy_v4_empty_block", "hy_v4", "x<tool_calls></tool_calls>")


EXPECTED = {
    'hy_v3_single': (None, [('get_weather', '{"city": "Paris", "days": 3}')]),
    'hy_v3_parallel': (None, [('get_weather', '{"city": "Paris", "days": 3}'), ('search', '{"q": " x ", "limit": 7}')]),
    'hy_v3_content_before': ('Let me look.\n', [('get_weather', '{"city": "Paris", "days": 3}')]),
    'hy_v3_types': (None, [('get_weather', '{"city": "1", "metric": false, "scale": 5, "tags": [1, 2], "opts": {"a": 1}, "note": "null", "mode": 12, "days": 1.5, "extra": "[3]"}')]),
    'hy_v3_missing_end': ('pre', [('get_weather', '{"city": "Paris", "days": 3}')]),
    'hy_v3_cut_mid_call': ('pre', [('get_weather', '{}')]),
    'hy_v3_cut_in_name': ('pre', []),
    'hy_v3_non_ascii': ('好的', [('get_weather', '{"city": "北京"}')]),
    'hy_v3_unknown_name': (None, [('nope', '{"a": "1"}')]),
    'hy_v3_call_before_block': ('x<tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>y', [('get_weather', '{"city": "Paris", "days": 3}')]),
    'hy_v3_no_block': ('x<tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>y', []),
    'hy_v3_suffix': ('hi', [('search', '{"q": "v"}')]),
    'hy_v3_bad_schema_type': (None, []),
    'hy_v4_single': (None, [('get_weather', '{"city": "Paris", "days": 3}')]),
    'hy_v4_parallel': (None, [('get_weather', '{"city": "Paris", "days": 3}'), ('search', '{"q": " x ", "limit": 7}')]),
    'hy_v4_content_before': ('Checking.\n', [('get_weather', '{"city": "Paris", "days": 3}')]),
    'hy_v4_types': (None, [('get_weather', '{"city": "1", "metric": true, "scale": 1000.0, "opts": {"a": 1}, "mode": "x"}')]),
    'hy_v4_missing_end': ('pre<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>', []),
    'hy_v4_cut_mid_call': ('pre<tool_calls><tool_call>get_weather<arg_key>ci', []),
    'hy_v4_non_ascii': ('好的', [('get_weather', '{"city": "Zürich ✓"}')]),
    'hy_v4_unknown_name': (None, [('nope', '{"a": "1"}')]),
    'hy_v4_stray_text': ('<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>A</arg_value>junk</tool_call></tool_calls>', []),
    'hy_v4_empty_name': ('<tool_calls><tool_call> </tool_call></tool_calls>', []),
    'hy_v4_no_args': (None, [('ping', '{}')]),
    'hy_v4_end_before_start': ('a</tool_calls>b<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call></tool_calls>', []),
    'hy_v4_ws_between_key_value': ('<tool_calls><tool_call>search<arg_key>q</arg_key> <arg_value>a</arg_value></tool_call></tool_calls>', []),
    'hy_v4_empty_block': ('x<tool_calls></tool_calls>', []),
}

(test_one_shot_matches_vllm, test_every_case_has_an_expectation,
 test_chunking_with_snapshot_restore_accumulates_to_one_shot, test_char_by_char_with_restore) = vllm_tests(CASES, EXPECTED, 70)


test_class_flags_follow_vllm = class_flags_test([
    ("hy_v3", True, False),
    ("hy_v4", False, False),
])


def test_sglang_hunyuan_spelling_is_hy_v3():
    assert registry.canonical_tool_name("hunyuan") == "hy_v3"


test_content_before_the_call_streams_before_the_end = content_first_test([
    ("hy_v3", "Let me look.\n", "<tool_calls>" + H + "</tool_calls>"),
    ("hy_v4", "Checking.\n", "<tool_calls>" + H4 + "</tool_calls>"),
])


def test_hy_v4_without_vocab_listing_uses_plain_tags():
    """The vocabulary gives no token list to scan for a suffix: unsuffixed tags are read."""
    deltas = feed_all("hy_v4", ["<tool_calls>" + H4 + "</tool_calls>"])
    assert [c.name for d in deltas for c in d.tool_calls] == ["get_weather"]


# -- hunyuan_a13b tool calls: vLLM 0.33's ``extract_tool_calls`` plus the serving layer's "no
# call: raw content" rule ------------------------------------------------------------------------

A13B_CASES = {
    'hunyuan_a13b': [
        ('plain',
         'plain', []),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure.\n<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_calls> after',
         'Sure.\n', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', []),
        ('<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>',
         '<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>', []),
        ('<tool_calls>bad</tool_calls>x<tool_calls>[{"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_calls>',
         '<tool_calls>bad</tool_calls>x', [('search', '{"q": "東京 🚀"}')]),
        ('<think><tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls></think> rest',
         '<think><tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls></think> rest', []),
        ('<tool_calls>[{"name": "f", "arguments": "s"}, {"name": "g"}, 3]</tool_calls>',
         '', [('f', 's')]),
        ('<tool_calls>[{"name": "f", "arguments": 5}]</tool_calls>',
         '<tool_calls>[{"name": "f", "arguments": 5}]</tool_calls>', []),
        ('<tool_calls>[]</tool_calls>',
         '<tool_calls>[]</tool_calls>', []),
        ('助手：hello',
         '助手：hello', []),
    ],
}

test_a13b_family, test_a13b_flags, test_a13b_chunking_invariance = family_tests(A13B_CASES, 40)


def test_a13b_ids():
    W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    h = call_ids("hunyuan_a13b", f"<tool_calls>[{W}]</tool_calls>")
    assert h[0].startswith("call_") and len(h[0]) == 21


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_hy_v3_reasoning():
    c = ctx("qwen3")
    assert parse("hy_v3", "a</think>b", c) == (None, "a</think>b")
    assert parse("hy_v3", "a</think>b", ctx(kwargs={"reasoning_effort": "high"})) == ("a", "b")


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# Hunyuan-A13B incremental calls: the ``<tool_calls>`` list streamed call by call, adding up
# to the one-shot answer (and its ``call_`` ids) for every split of a well-formed output.

_WS = st.text(" \n", max_size=2)

_OBJECTS = JSON_TEXT.filter(lambda t: t.startswith("{"))

stream = partial(restored, "hunyuan_a13b")


@st.composite
def a13b_output(draw) -> str:
    entries = []
    for _ in range(draw(st.integers(1, 3))):
        members = [f'"name":{draw(_WS)}{draw(json_string())}',
                   f'"arguments"{draw(_WS)}:{draw(_WS)}{draw(st.one_of(_OBJECTS, json_string()))}']
        if draw(st.booleans()):
            members.reverse()
        entries.append("{" + draw(_WS) + ("," + draw(_WS)).join(members) + draw(_WS) + "}")
    head = draw(st.sampled_from(["", "Let me check. ", "日本 😀\n", " "]))
    tail = draw(st.sampled_from(["", " done", "\n"]))
    return f"{head}<tool_calls>{draw(_WS)}[{draw(_WS)}{(',' + draw(_WS)).join(entries)}{draw(_WS)}]{draw(_WS)}</tool_calls>{tail}"


@settings(max_examples=300, deadline=None)
@given(a13b_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_a13b_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
        assert all(i and i.startswith("call_") and len(i) == 21 for i, _, _ in got.calls)
    else:
        once = stream([text])
        assert (got.content, got.named_calls()) == (once.content, once.named_calls())
