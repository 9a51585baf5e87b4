"""DeepSeek V3.2 / V4 / V4.1 DSML tool calls: one-shot results and chunking invariance.

Expected values follow vLLM 0.33's non-streaming engine parsers (deepseek_v32, deepseek_v4,
deepseek_v41) for the same text.

Incremental streams (``DsmlStreamedCalls``): random splits, one character at a time and whole,
with the state restored between pieces, add up to the one-shot answer for well-formed output;
truncated output gets one answer for every split.

Known gaps:
- incremental: a call whose first parameter is ``arguments``/``input`` is held to its end (vLLM
  unwraps it by the schema); a value cut by the end of its call is closed if it was streaming
  (the one-shot answer drops it); a repeated parameter is sent again (the one-shot answer keeps
  the last value at the first one's place).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, feed, parse, split
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from conftest import MODELS

FOLDER = MODELS / "deepseek-v3"
VOCAB = HFTokenizer(FOLDER, json.loads((FOLDER / "tokenizer_config.json").read_text()))
EOS = "<｜end▁of▁sentence｜>"
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
        "q": {"type": "string"}, "n": {"type": ["integer", "null"]}}}}},
]

# parser -> (tag prefix, wrapper open, wrapper close)
DIALECTS = {
    "deepseek_v32": ("｜DSML｜", "<｜DSML｜function_calls>", "</｜DSML｜function_calls>"),
    "deepseek_v4": ("｜DSML｜", "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"),
    "deepseek_v41": ("｜DSML｜ ", "<｜DSML｜ calls>", "</｜DSML｜ calls>"),
}


def markup(parser: str, template: str) -> str:
    """``template`` with ``{S}``/``{E}`` (wrapper), ``{I:name}``/``{/I}`` (invoke) and
    ``{P:key:flag}``/``{/P}`` (parameter), ``{CUT}`` (an invoke cut before its name's end) spelled in ``parser``'s dialect."""
    tag, start, end = DIALECTS[parser]
    out = template.replace("{S}", start).replace("{E}", end).replace("{/I}", f"</{tag}invoke>")
    out = out.replace("{/P}", f"</{tag}parameter>").replace("{CUT}", f'<{tag}invoke name="')
    while "{I:" in out:
        a = out.index("{I:")
        b = out.index("}", a)
        out = out[:a] + f'<{tag}invoke name="{out[a + 3:b]}">' + out[b + 1:]
    while "{P:" in out:
        a = out.index("{P:")
        b = out.index("}", a)
        key, flag = out[a + 3:b].split(":")
        attrs = f' name="{key}"' + (f' string="{flag}"' if flag else "")
        out = out[:a] + f"<{tag}parameter{attrs}>" + out[b + 1:]
    return out


def run(parser: str, pieces: list[str], **ctx_kw) -> tuple[str, list[tuple[str, str]]]:
    """Feed the pieces with a snapshot/restore (through msgpack) between any two of them."""
    ctx = ParseContext(tools=TOOLS, tool_choice="auto", vocab=VOCAB, reasoning_parser="deepseek_v4")
    for k, v in ctx_kw.items():
        setattr(ctx, k, v)
    fed = feed(lambda: registry.get_tool_parser(parser)(ctx), pieces, restore=True)
    assert all(call_id is None for call_id, _, _ in fed.calls)
    return fed.content, fed.named_calls()


WEATHER = '{I:get_weather}\n{P:city:true}東京{/P}\n{P:days:false}3{/P}\n{/I}\n'
# (template, content, calls), valid in every dialect.
CASES = [
    ("{S}\n" + WEATHER + "{E}", "", [("get_weather", '{"city": "東京", "days": 3}')]),
    # parallel calls; text before is content, text after the block is dropped
    ("Let me check.\n\n{S}\n" + WEATHER + '{I:search}\n{P:q:true}a "b"\n{/P}\n{/I}\n{E} tail',
     "Let me check.\n\n",
     [("get_weather", '{"city": "東京", "days": 3}'), ("search", '{"q": "a \\"b\\"\\n"}')]),
    # a non-JSON value keeps its text; a string="true" value is coerced by the schema
    ("{S}{I:get_weather}{P:city:false}{bad{/P}{P:days:true}7{/P}{/I}{E}", "",
     [("get_weather", '{"city": "{bad", "days": 7}')]),
    # missing string flag reads as JSON-or-text; emoji and CJK pass through unescaped
    ('{S}{I:search}{P:q:}"🚀 café"{/P}{P:n:}null{/P}{/I}{E}', "",
     [("search", '{"q": "🚀 café", "n": null}')]),
    # no end markers at all: the call ends with the output
    ("{S}{I:get_weather}{P:city:true}Paris{/P}", "", [("get_weather", '{"city": "Paris"}')]),
    # cut mid-parameter (length): the unclosed parameter is dropped, the call is kept
    ("{S}{I:get_weather}{P:city:true}Paris{/P}{P:days:false}1", "",
     [("get_weather", '{"city": "Paris"}')]),
    # cut inside the name: the name is all there is
    ("ok{S}{CUT}get_wea", "ok", [("get_wea", "{}")]),
    # the wrapper alone, cut: nothing, and no content from it
    ("Hi {S}\n", "Hi ", []),
    # whitespace-only content is dropped once a call starts
    ("\n\n{S}" + WEATHER + "{E}", "", [("get_weather", '{"city": "東京", "days": 3}')]),
    # an invoke without the wrapper is still a call
    ("x{I:search}{P:q:true}y{/P}{/I}", "x", [("search", '{"q": "y"}')]),
    # a name with spaces is stripped; an unknown name is kept
    ('{S}{I: nope }{P:a:false}[1, 2]{/P}{/I}{E}', "", [("nope", '{"a": [1, 2]}')]),
    # an empty name drops the call; later calls keep counting from 0
    ("{S}{I:}{P:q:true}x{/P}{/I}{I:search}{/I}{E}", "", [("search", "{}")]),
    # an empty name with a JSON body names the call from it
    ('{S}{I:}{"name": "search", "arguments": {"q": "z"}}{/I}{E}', "", [("search", "{}")]),
    # wrapped arguments are unwrapped when the tool has no such parameter
    ('{S}{I:get_weather}{P:arguments:false}{"city": "Rome"}{/P}{/I}{E}', "",
     [("get_weather", '{"city": "Rome"}')]),
    # unconfigured special tokens are dropped everywhere
    (f"a{EOS}b{{S}}{{I:search}}{{P:q:true}}x{EOS}y{{/P}}{{/I}}{{E}}", "ab", [("search", '{"q": "xy"}')]),
    ("No tools here.", "No tools here.", []),
    ("   ", "   ", []),
]


@pytest.mark.parametrize("parser", list(DIALECTS))
@pytest.mark.parametrize("template,content,calls", CASES)
def test_one_shot(parser, template, content, calls):
    assert run(parser, [markup(parser, template)]) == (content, calls)


def test_other_dialects_markup_is_content():
    v4_text = markup("deepseek_v4", "{S}" + WEATHER + "{E}")
    assert run("deepseek_v41", [v4_text]) == (v4_text, [])
    v41_text = markup("deepseek_v41", "{S}" + WEATHER + "{E}")
    assert run("deepseek_v32", [v41_text]) == (v41_text, [])


def test_v4_wrapper_spellings():
    for start in ("<｜DSML｜toolcalls>", "<｜DSML｜tool>"):
        text = "a" + start + markup("deepseek_v4", WEATHER)
        assert run("deepseek_v4", [text]) == ("a", [("get_weather", '{"city": "東京", "days": 3}')])
    text = markup("deepseek_v32", "a<｜DSML｜tool_calls>{I:search}{/I}")
    assert run("deepseek_v32", [text]) == ("a<｜DSML｜tool_calls>", [("search", "{}")])


def test_think_markup_needs_a_reasoning_parser():
    text = markup("deepseek_v4", "a</think>b<think>hidden{S}{I:search}{/I}{E}")
    assert run("deepseek_v4", [text]) == ("ab", [("search", "{}")])
    assert run("deepseek_v4", [text], reasoning_parser=None) == ("a</think>b<think>hidden", [("search", "{}")])
    # V3.2 has no reasoning markup at all
    assert run("deepseek_v32", ["a</think>b"]) == ("a</think>b", [])


def test_none_choice_keeps_whitespace_content():
    text = markup("deepseek_v4", "\n{S}" + WEATHER + "{E}")
    content, _ = run("deepseek_v4", [text], tool_choice="none")
    assert content == "\n"


def test_registered_names_and_flags():
    for parser, aliases in {
        "deepseek_v32": ("deepseekv32", "deepseek32", "deepseek_v3_2"),
        "deepseek_v4": ("deepseekv4", "deepseek-v4"),
        "deepseek_v41": (),
    }.items():
        cls = registry.get_tool_parser(parser)
        assert cls.name == parser and cls.engine_based and not cls.supports_required_and_named
        assert all(registry.get_tool_parser(a) is cls for a in aliases)


def test_bad_snapshot_is_rejected():
    p = registry.get_tool_parser("deepseek_v4")(ParseContext(tools=TOOLS, vocab=VOCAB))
    with pytest.raises(ValueError):
        p.restore(["nowhere", "", "", "", "", 0, []])


EXTRA = [  # one-shot outputs of texts whose expectations depend on the dialect
    ("deepseek_v4", markup("deepseek_v4", "r</think>\n\n{S}" + WEATHER + "{E}")),
    ("deepseek_v4", markup("deepseek_v4", "<think>x{S}{I:search}{P:q:true}q{/P}")),
]


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from([(p, markup(p, t)) for p in DIALECTS for t, _, _ in CASES] + EXTRA),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    think_markup=st.booleans(),
)
def test_any_chunking_accumulates_to_one_shot(case, cuts, think_markup):
    parser, text = case
    kw = {} if think_markup else {"reasoning_parser": None}
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    assert run(parser, pieces, **kw) == run(parser, [text], **kw)


def test_char_by_char_equals_one_shot():
    for parser in DIALECTS:
        text = markup(parser, "Hi{S}" + WEATHER + '{I:search}{P:q:true}東京{/P}{/I}{E}')
        assert run(parser, list(text)) == run(parser, [text])


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_deepseek_v4_reasoning():
    c = ctx("deepseek-v3")
    assert parse("deepseek_v4", "a \n</think>b", c) == ("a", "b")
    assert parse("deepseek_v4", "a<｜DSML｜tool_calls>x", c) == ("a", "<｜DSML｜tool_calls>x")
    off = ctx("deepseek-v3", {"thinking": False})
    assert parse("deepseek_v4", "x<think>a</think>b", off) == ("a", "xb")  # content reopens
    assert parse("deepseek_v41", "a<｜DSML｜ calls>x", c) == ("a", "<｜DSML｜ calls>x")


# -- incremental streams ---------------------------------------------------------------------------

STREAM_TOOLS = TOOLS + [{"type": "function", "function": {"name": "write_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                                     "mode": {"type": "integer"}, "opts": {"type": "object"}}}}}]
_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<"), max_size=12),
    st.sampled_from(["\n", " 0644 ", "12", "1.5", "true", "null", '{"a": [1, 2]}', "[1,2]", 'a "q" <b>', "NaN",
                     "x\n\n", "<｜DSML｜parameter", "a<｜DSML｜parameter x"]),
)


def streamed(parser: str, pieces: list[str], incremental: bool = True):
    c = ParseContext(tools=STREAM_TOOLS, tool_choice="auto", vocab=VOCAB, reasoning_parser="deepseek_v4")
    cls = registry.get_tool_parser(parser)
    return feed(lambda: (cls.incremental if incremental else cls)(c), pieces, restore=True)


@st.composite
def dsml_output(draw) -> tuple[str, str]:
    parser = draw(st.sampled_from(list(DIALECTS)))
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["write_file", "get_weather", "search", "other", " spaced ", ""]))
        keys = draw(st.lists(st.sampled_from(["path", "content", "mode", "opts", "city", "days", "q", "n", "x",
                                              "arguments"]), max_size=4, unique=True))
        gap = st.sampled_from(["", "\n", " junk "])
        params = "".join(f"{{P:{k}:{draw(st.sampled_from(['true', 'false', '']))}}}{draw(_VALUES)}{{/P}}{draw(gap)}"
                         for k in keys)
        calls.append(f"{{I:{name}}}{draw(gap)}{params}{{/I}}{draw(st.sampled_from(['', chr(10)]))}")
    head = draw(st.sampled_from(["", "Sure.\n\n", "  ", "Hi <"]))
    tail = draw(st.sampled_from(["{E}", "{E} after", ""]))
    return parser, markup(parser, head + "{S}\n" + "".join(calls) + tail)


@settings(max_examples=300, deadline=None)
@given(dsml_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_incremental_streams_add_up_to_the_one_shot_answer(case, cuts):
    parser, text = case
    want = streamed(parser, [text], incremental=False)
    got = streamed(parser, split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert streamed(parser, list(text)) == got


@settings(max_examples=200, deadline=None)
@given(dsml_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_stream_gets_the_same_answer_for_every_split(case, cut, cuts):
    parser, text = case
    text = text[: cut % (len(text) + 1)]
    got = streamed(parser, split(text, cuts))
    assert got == streamed(parser, [text]) == streamed(parser, list(text))
    assert got.content == streamed(parser, [text], incremental=False).content


def test_a_string_value_streams_as_it_arrives_and_others_at_their_end():
    c = ParseContext(tools=STREAM_TOOLS, tool_choice="auto", vocab=VOCAB)
    p = registry.get_tool_parser("deepseek_v4").incremental(c)
    steps = markup("deepseek_v4", "{S}{I:write_file}{P:path:true}a.py{/P}{P:content:true}li|ne 1\n|"
                                  '"x"{/P}{P:mode:false}7{/P}|{/I}{E}').split("|")
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", ""), (None, '{"path": "'), (None, "a.py"), (None, '"'),
                     (None, ', "content": "'), (None, "li")], [(None, "ne 1\\n")],
                    [(None, '\\"x\\"'), (None, '"'), (None, ', "mode": 7')], [(None, "}")]]


def test_a_wrapper_parameter_holds_the_call_for_the_one_shot_answer():
    text = markup("deepseek_v4", '{S}{I:get_weather}{P:arguments:false}{"city": "Rome"}{/P}{/I}{E}')
    p = registry.get_tool_parser("deepseek_v4").incremental(ParseContext(tools=TOOLS, tool_choice="auto", vocab=VOCAB))
    head, tail = text.split("{", 1)
    assert [(tc.name, tc.arguments) for tc in p.feed(head, []).tool_calls] == [("get_weather", "")]
    assert [tc.arguments for tc in p.feed("{" + tail, []).tool_calls] == ['{"city": "Rome"}']


def test_parameter_headers_read_as_the_one_shot_pattern():
    """The header check agrees with the one-shot regex on every prefix of these headers."""
    from tokenbridge.parsers.families.deepseek_dsml import _HEADER, _header_may_follow
    import re
    for header in (' name="a">', '  name="k" string="true" >', ' name="a" string="">', '\tname="x"\n>'):
        for n in range(len(header)):
            assert _header_may_follow(header[:n]) and not _HEADER.match(header[:n])
    for bad in ('name="a">', ' name=""', ' nam="', ' name="a" x', ' name="a"string', ' name="a" string="t" x'):
        assert not _header_may_follow(bad)
    assert all(re.match(r"\s", ch) for ch in map(chr, range(0x3000 + 1)) if ch.isspace())
