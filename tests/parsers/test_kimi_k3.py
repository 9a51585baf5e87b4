"""Kimi K3 XTML tool calls: one-shot results and chunking invariance.

Expected values follow vLLM 0.33's non-streaming ``kimi_k3`` tool parser for the same text.

Incremental streams (``KimiK3StreamedCalls``): random splits, one character at a time and whole,
with the state restored between pieces, add up to the one-shot answer for well-formed output;
truncated output gets one answer for every split, and the state never holds the calls.

Known gaps:
- incremental: the content is held until a ``response`` block completes or the output ends (it
  may come last); a call or argument whose block does not close stands, closed (the one-shot
  answer drops it); a repeated argument key is sent again.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import SHARED_MARKERS, feed, marker_vocab, parse, parser_cls, split
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import Delta, ParseContext

O, C, S = "<|open|>", "<|close|>", "<|sep|>"
TOOLS_OPEN, TOOLS_CLOSE = f"{O}tools{S}", f"{C}tools{S}"
R_OPEN, R_CLOSE = f"{O}response{S}", f"{C}response{S}"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def arg(key: str, typ: str, value: str) -> str:
    return f'{O}argument key="{key}" type="{typ}"{S}{value}{C}argument{S}'


def call(tool: str, *args: str, index: int = 1) -> str:
    return f'{O}call tool="{tool}" index="{index}"{S}' + "".join(args) + f"{C}call{S}"


def run(pieces: list[str], **ctx_kw) -> tuple[str, list[tuple[str, str]]]:
    """Feed the pieces with a snapshot/restore (through msgpack) between any two of them."""
    ctx = ParseContext(tools=TOOLS, tool_choice="auto", **ctx_kw)
    fed = feed(lambda: registry.get_tool_parser("kimi_k3")(ctx), pieces, restore=True)
    return fed.content, fed.named_calls()


WEATHER = call("get_weather", arg("city", "string", "東京"), arg("days", "integer", "3"))
WEATHER_ARGS = '{"city": "東京", "days": 3}'
CASES = [
    # the response open is usually part of the prompt: content is what precedes its close
    ("Hi" + R_CLOSE + TOOLS_OPEN + WEATHER + TOOLS_CLOSE, "Hi", [("get_weather", WEATHER_ARGS)]),
    # parallel calls; string values are raw, other types JSON (else their raw text)
    (R_CLOSE + TOOLS_OPEN + WEATHER + "\n"
     + call("search", arg("q", "string", ' a "b"\n'), arg("o", "object", '{"k": [1, 2]}'), index=2)
     + call("search", arg("n", "integer", "{bad"), arg("b", "boolean", "true"), index=3) + TOOLS_CLOSE,
     "", [("get_weather", WEATHER_ARGS), ("search", '{"q": " a \\"b\\"\\n", "o": {"k": [1, 2]}}'),
          ("search", '{"n": "{bad", "b": true}')]),
    # a complete response block is the content, wherever it is
    (R_OPEN + "Hello 😀" + R_CLOSE + TOOLS_OPEN + WEATHER, "Hello 😀", [("get_weather", WEATHER_ARGS)]),
    ("early" + R_CLOSE + R_OPEN + "late" + R_CLOSE, "late", []),
    ("Hi" + TOOLS_OPEN + WEATHER + TOOLS_CLOSE + R_OPEN + "after" + R_CLOSE, "after",
     [("get_weather", WEATHER_ARGS)]),
    # an unclosed response open: the text after it, up to the tools channel
    ("pre" + R_OPEN + "body" + f"{C}message{S}", "body", []),
    ("Hi" + f"{C}message{S}", "Hi", []),
    # calls outside the tools channel are not calls; text after the channel is not content
    (WEATHER + "Hi", WEATHER + "Hi", []),
    ("Hi" + TOOLS_OPEN + WEATHER + TOOLS_CLOSE + WEATHER + "tail", "Hi", [("get_weather", WEATHER_ARGS)]),
    # a call block without its close (length cut) is dropped; earlier calls stay
    ("Hi" + TOOLS_OPEN + WEATHER + call("get_weather", arg("city", "string", "Rome"))[:-12], "Hi",
     [("get_weather", WEATHER_ARGS)]),
    ("Hi" + TOOLS_OPEN + f'{O}call tool="get_w', "Hi", []),
    # a block without a tool name is dropped; attribute values are unescaped
    (TOOLS_OPEN + call("") + call("a&amp;b", arg("&quot;k&quot;", "string", "v")), "",
     [("a&b", '{"\\"k\\"": "v"}')]),
    # an argument without a close ends nowhere: it is not an argument
    (TOOLS_OPEN + call("get_weather", arg("days", "integer", "2")[:-13]), "", [("get_weather", "{}")]),
    ("Plain answer.", "Plain answer.", []),
    ("  ", "  ", []),
]


@pytest.mark.parametrize("text,content,calls", CASES)
def test_one_shot(text, content, calls):
    assert run([text]) == (content, calls)


def test_calls_are_emitted_when_their_block_closes():
    cls = registry.get_tool_parser("kimi_k3")
    p = cls(ParseContext(tools=TOOLS, tool_choice="auto"))
    d = p.feed("Hi" + R_CLOSE + TOOLS_OPEN + WEATHER, [])
    assert d.content == "" and [(t.index, t.name) for t in d.tool_calls] == [(0, "get_weather")]
    assert len(p.snapshot()._buf) > 0  # content undecided: the output is held
    f = p.finish()
    assert f.content == "Hi" and f.tool_calls == []


def test_decided_content_frees_the_held_text():
    cls = registry.get_tool_parser("kimi_k3")
    p = cls(ParseContext(tools=TOOLS, tool_choice="auto"))
    d = p.feed(R_OPEN + "Hello" + R_CLOSE + TOOLS_OPEN + WEATHER + TOOLS_CLOSE, [])
    assert d.content == "Hello" and len(d.tool_calls) == 1
    assert p.snapshot()._buf == ""
    assert p.feed(TOOLS_OPEN + WEATHER, []) == Delta()


def test_registered_name_and_flags():
    cls = registry.get_tool_parser("kimi_k3")
    assert cls.name == "kimi_k3" and cls.engine_based and not cls.supports_required_and_named
    with pytest.raises(ValueError):
        cls(ParseContext()).restore(["", "yes", False, False, 0, 0])


@settings(max_examples=80, deadline=None)
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 600), max_size=12))
def test_any_chunking_accumulates_to_one_shot(case, cuts):
    text, content, calls = case
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    assert run([text[a:b] for a, b in zip(bounds, bounds[1:])]) == (content, calls)


def test_char_by_char_equals_one_shot():
    for text, content, calls in CASES:
        assert run(list(text)) == (content, calls)


# -- incremental streams ---------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), max_size=10)
_WS = st.sampled_from(["", " ", "\n", "  \n "])


def streamed(pieces: list[str], incremental: bool = True):
    cls = registry.get_tool_parser("kimi_k3")
    c = ParseContext(tools=TOOLS, tool_choice="auto")
    return feed(lambda: (cls.incremental if incremental else cls)(c), pieces, restore=True)


@st.composite
def k3_output(draw) -> str:
    def tag(kind: str, word: str, attrs: str = "") -> str:
        sp = (draw(st.sampled_from([" ", "\n", "  "])) + attrs) if attrs else draw(_WS)
        return f"<|{kind}|>{draw(_WS)}{word}{sp}{draw(_WS) if not attrs else ''}{S}"

    calls = []
    for n in range(draw(st.integers(1, 3))):
        args = []
        for key in draw(st.lists(st.sampled_from(["city", "days", "q", "o", "&quot;k&quot;", ""]), max_size=3, unique=True)):
            typ = draw(st.sampled_from(["string", "integer", "object", "boolean", None]))
            value = draw(st.one_of(_TEXT, st.sampled_from(["3", ' {"k": [1, 2]} ', "true", "null", "{bad", "a <|b|>",
                                                           "<|close|>argumen", "x <|open|>"])))
            attrs = f'key="{key}"' + (f' type="{typ}"' if typ else "")
            args.append(tag("open", "argument", attrs) + value + tag("close", "argument") + draw(_WS))
        name = draw(st.sampled_from(["get_weather", "search", "a&amp;b", ""]))
        attrs = (f'tool="{name}" ' if name or draw(st.booleans()) else "") + f'index="{n + 1}"'
        calls.append(tag("open", "call", attrs) + draw(_WS) + "".join(args) + tag("close", "call") + draw(_WS))
    head = draw(st.sampled_from(["", "Hi" + R_CLOSE, R_OPEN + "Hello 😀" + R_CLOSE, "pre" + R_OPEN + "body", "x <|open|>"]))
    tail = draw(st.sampled_from(["", TOOLS_CLOSE, TOOLS_CLOSE + R_OPEN + "late" + R_CLOSE, TOOLS_CLOSE + "after"]))
    return head + tag("open", "tools") + "".join(calls) + tail


@settings(max_examples=300, deadline=None)
@given(k3_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_incremental_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = streamed([text], incremental=False)
    got = streamed(split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert streamed(list(text)) == got


@settings(max_examples=200, deadline=None)
@given(k3_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_stream_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = streamed(split(text, cuts))
    assert got == streamed([text]) == streamed(list(text))
    assert got.content == streamed([text], incremental=False).content
    for _, _, args in got.calls:
        json.loads(args)


def test_a_string_argument_streams_as_it_arrives_and_others_at_their_end():
    p = registry.get_tool_parser("kimi_k3").incremental(ParseContext(tools=TOOLS, tool_choice="auto"))
    steps = ["Hi" + R_CLOSE + TOOLS_OPEN + f'{O}call tool="get_weather"{S}{O}argument key="city"{S}東', '京"',
             f'{C}argument{S}{O}argument key="days" type="integer"{S}3', f"{C}argument{S}{C}call{S}"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("get_weather", "{"), (None, '"city": "'), (None, "東")], [(None, '京\\"')],
                    [(None, '"')], [(None, ', "days": 3'), (None, "}")]]
    assert len(msgspec.msgpack.encode(p.snapshot())) < 60  # the calls are not in the state
    assert p.finish().content == "Hi"


# -- reasoning: vLLM 0.33's non-streaming ``parse()`` of ``KimiK3Parser``, on Qwen3's real
# tokenizer with the K3 markers added as special tokens ------------------------------------------

KIMI_K3 = SHARED_MARKERS  # the vocabulary vLLM's answers were recorded with
REASONING_TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def reasoning_ctx(v, kwargs=None, tools=None, prompt=None) -> ParseContext:
    return ParseContext(tools=tools, tool_choice="auto" if tools else "none", chat_template_kwargs=kwargs or {},
                        prompt_token_ids=prompt or [], vocab=v)


REASONING_CASES = [
    # (chat_template_kwargs, tools, text, (reasoning, content))
    ({}, None, '<|open|>think<|sep|>r<|close|>think<|sep|><|open|>response<|sep|>c<|close|>response<|sep|><|close|>message<|sep|>', ('r', 'c')),
    ({}, None, 'r<|close|>think<|sep|>c', ('r', 'c')),
    ({}, None, 'cut by length', ('cut by length', None)),
    ({}, None, '<|open|>response<|sep|>only content', (None, 'only content')),
    ({}, REASONING_TOOLS, '<|open|>think<|sep|>r<|close|>think<|sep|><|open|>response<|sep|>c<|close|>response<|sep|><|open|>tools<|sep|>x', ('r', '<|open|>response<|sep|>c<|close|>response<|sep|><|open|>tools<|sep|>x')),
    ({'thinking': False}, None, '<|open|>think<|sep|>r<|close|>think<|sep|><|open|>response<|sep|>c<|close|>response<|sep|>', (None, 'c')),
    ({}, None, '<|open|>think<|sep|>日本<|close|>think<|sep|>é😀', ('日本', 'é😀')),
    ({}, None, '<|open|> think <|sep|>r<|close|> think <|sep|>c', ('r', 'c')),
]


@pytest.mark.parametrize("kwargs,tools,text,expected", REASONING_CASES)
def test_reasoning_one_shot_matches_vllm(kwargs, tools, text, expected):
    assert parse("kimi_k3", text, reasoning_ctx(marker_vocab(KIMI_K3), kwargs, tools)) == expected


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(REASONING_CASES), cuts=st.lists(st.integers(0, 120), max_size=8))
def test_reasoning_any_chunking_accumulates_to_one_shot(case, cuts):
    kwargs, tools, text, expected = case
    c = reasoning_ctx(marker_vocab(KIMI_K3), kwargs, tools)
    assert parse("kimi_k3", text, c, split(text, cuts)) == expected


@pytest.mark.parametrize("kwargs,prompt,ended", [
    ({}, "<|open|>think<|sep|>", False),
    ({}, "<|open|>think<|sep|>x<|close|>think<|sep|>", True),
    ({}, "hello", False),
    ({"thinking": False}, "hello", True),
])
def test_markers_in_prompt(kwargs, prompt, ended):
    v = marker_vocab(KIMI_K3)
    ids = v.encode(prompt)
    assert parser_cls("kimi_k3").reasoning_ended_in_prompt(ids, reasoning_ctx(v, kwargs, prompt=ids)) is ended
