"""Step 3 (``families/step.py``) tool calls: one-shot answers equal vLLM 0.33's (recorded by
running vLLM's own class on these texts), and any chunking with snapshot/restore between
chunks accumulates to the same answer (``held_block``); step5's calls, in qwen3_coder's spelling,
against vLLM's ``extract_tool_calls`` (the qwen3_coder incremental stream is in ``test_qwen.py``).

Known gaps:
- none known for the incremental stream (``--tool-call-streaming incremental``, tested at the end).
"""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, split
from held_block import Cases, class_flags_test, content_first_test, feed_all, vllm_tests
from incremental import restored
from tag_families import one, qcall, run

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext


CASES = Cases()
add = CASES.add

# ---- step3
B, E, CB, CE, S = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>", "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
def s3(name, params, kind="function"):
    ps = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in params)
    return f'{CB}{kind}{S}<steptml:invoke name="{name}">{ps}</steptml:invoke>{CE}'
W = s3("get_weather", [("city", " Paris "), ("days", "3")])
add("step3_single", "step3", B + W + E)
add("step3_parallel", "step3", B + W + "\n" + s3("search", [("q", "café"), ("limit", "x")]) + E)
add("step3_content_around", "step3", "  Let me check.\n" + B + W + E + "\nDone.  ")
add("step3_content_before", "step3", "Sure " + B + W + E)
add("step3_types", "step3", B + s3("get_weather", [("city", "A"), ("metric", "TRUE"), ("scale", "2.50"), ("note", "null"), ("days", "3.5"), ("tags", "[1]")]) + E)
add("step3_missing_end", "step3", "pre " + B + W)
add("step3_cut_mid_call", "step3", "pre " + B + W[:40])
add("step3_non_ascii", "step3", "天气：" + B + s3("get_weather", [("city", "東京 ☀")]) + E + " 好")
add("step3_unknown_name", "step3", B + s3("nope", [("a", "1")]) + E)
add("step3_bad_kind", "step3", "x " + B + s3("get_weather", [("city", "A")], kind="python") + E)
add("step3_unclosed_call", "step3", B + W + CB + "function" + S + '<steptml:invoke name="ping">' + E)
add("step3_ws_only_content", "step3", " \n" + B + W + E + " \n")
add("step3_no_markers", "step3", "  plain answer  ")


EXPECTED = {
    'step3_single': (None, [('get_weather', '{"city": "Paris", "days": 3}')]),
    'step3_parallel': (None, [('get_weather', '{"city": "Paris", "days": 3}'), ('search', '{"q": "café", "limit": "x"}')]),
    'step3_content_around': ('Let me check.\n\nDone.', [('get_weather', '{"city": "Paris", "days": 3}')]),
    'step3_content_before': ('Sure', [('get_weather', '{"city": "Paris", "days": 3}')]),
    'step3_types': (None, [('get_weather', '{"city": "A", "metric": true, "scale": 2.5, "note": "null", "days": "3.5", "tags": "[1]"}')]),
    'step3_missing_end': ('pre <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather"><steptml:parameter name="city"> Paris </steptml:parameter><steptml:parameter name="days">3</steptml:parameter></steptml:invoke><｜tool_call_end｜>', []),
    'step3_cut_mid_call': ('pre <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><', []),
    'step3_non_ascii': ('天气： 好', [('get_weather', '{"city": "東京 ☀"}')]),
    'step3_unknown_name': (None, [('nope', '{"a": "1"}')]),
    'step3_bad_kind': ('x <｜tool_calls_begin｜><｜tool_call_begin｜>python<｜tool_sep｜><steptml:invoke name="get_weather"><steptml:parameter name="city">A</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>', []),
    'step3_unclosed_call': (None, [('get_weather', '{"city": "Paris", "days": 3}')]),
    'step3_ws_only_content': (None, [('get_weather', '{"city": "Paris", "days": 3}')]),
    'step3_no_markers': ('  plain answer  ', []),
}

(test_one_shot_matches_vllm, test_every_case_has_an_expectation,
 test_chunking_with_snapshot_restore_accumulates_to_one_shot, test_char_by_char_with_restore) = vllm_tests(CASES, EXPECTED, 60)


test_class_flags_follow_vllm = class_flags_test([
    ("step3", True, False),
])


test_content_before_the_call_streams_before_the_end = content_first_test([
    ("step3", "Sure", " " + B + W + E),
])


def test_step3_holds_leading_and_trailing_whitespace():
    deltas = feed_all("step3", ["  hi", " \n", B + W + E, " "])
    assert "".join(d.content for d in deltas) == "hi"
    assert deltas[0].content == ""


# -- step5 tool calls: qwen3_coder's spelling (the tag engine) ---------------------------------------

# (family, output text, expected content, expected calls); expectations follow vLLM 0.33's
# non-streaming extract_tool_calls for the same text.
XML_CASES = [
    # step5 keeps content whitespace
    ("step5", "  Sure! " + qcall("search", q="a"), "  Sure! ", [("search", '{"q": "a"}')]),
]


@pytest.mark.parametrize("name,text,content,calls", XML_CASES)
def test_step5_one_shot(name, text, content, calls):
    assert one(name, text) == (content, calls)


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_step5_random_chunkings_accumulate_to_one_shot(data):
    name, text, _, _ = data.draw(st.sampled_from(XML_CASES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    restore = data.draw(st.booleans())
    assert run(name, pieces, restore=restore) == one(name, text)


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_step_reasoning():
    c = ctx("qwen3")
    assert parse("step3", "<think>a</think>b", c) == ("<think>a", "b")
    assert parse("step3", "", c) == ("", None)
    assert parse("step3p5", "a \n</think>\nb", c) == ("a", "\nb")
    assert parse("step5", "a</think>b", ctx("deepseek-v3")) == ("a", "b")


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# Step-3 incremental calls: the calls block read as written, string values streaming stripped,
# adding up to the one-shot answer for every split of a well-formed output.

STREAM_TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"},
    "ratio": {"type": "number"}, "force": {"type": "boolean"}, "opts": {"type": "object"}}}}}]

STREAM_CTX = ParseContext(tools=STREAM_TOOLS, tool_choice="auto")

_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<>"), max_size=12),
    st.sampled_from(["\n", " 0644 ", "12", "1.5", "true", "False", "null", '{"a": 1}', " a b ", "x\n\n"]),
)

stream = partial(restored, "step3", ctx=STREAM_CTX)


@st.composite
def step3_output(draw) -> str:
    calls = []
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "other"]))
        keys = draw(st.lists(st.sampled_from(["path", "content", "mode", "ratio", "force", "opts", "x"]),
                             max_size=4, unique=True))
        params = "".join(f'<steptml:parameter name="{k}">{draw(_VALUES)}</steptml:parameter>' for k in keys)
        kind = draw(st.sampled_from(["function", " function\n"]))
        calls.append(f'{CB}{kind}{S}<steptml:invoke name="{name}">{params}</steptml:invoke>{CE}')
    head = draw(st.sampled_from(["", "Sure.", "  Let me look. \n", "Hi\n\n"]))
    tail = draw(st.sampled_from(["", " Done. ", "\n"]))
    return f"{head}{B}{draw(st.sampled_from(['', chr(10)]))}{chr(10).join(calls)}{E}{tail}"


@settings(max_examples=300, deadline=None)
@given(step3_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_step3_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    assert want.calls
    assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    assert stream(list(text)) == got


@settings(max_examples=200, deadline=None)
@given(step3_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = stream(split(text, cuts))
    assert got == stream([text]) == stream(list(text))
    if not got.calls:
        assert got.content == (stream([text], incremental=False).content or "")


def test_no_call_leaves_the_output_as_content():
    for text in ("  plain", f"Hi {B}{CB}nope{S}x{CE}{E} after", f" {B}{E}"):
        assert stream(list(text)).content == text == stream([text], incremental=False).content


def test_a_string_value_streams_stripped_as_it_arrives():
    p = registry.get_tool_parser("step3").incremental(STREAM_CTX)
    steps = [f'Ok{B}{CB}function{S}<steptml:invoke name="write_file"><steptml:parameter name="content"> li', "ne 1\n",
             'x </steptml:parameter><steptml:parameter name="mode">7</steptml:parameter>', f"</steptml:invoke>{CE}{E}"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{"), (None, '"content": "'), (None, "li")], [(None, "ne 1")],
                    [(None, "\\nx"), (None, '"'), (None, ', "mode": 7')], [(None, "}")]]
