"""vLLM's qwen3 family (``families/qwen.py``): the ``granite_thinking_parser`` reasoning rows
against vLLM 0.33's non-streaming ``extract_reasoning`` (synthetic-families tokenizer), the
``qwen3_coder`` tool calls against its ``extract_tool_calls``, and chunking invariance for
both. Qwen3's own reasoning cases are in ``test_reasoning.py``; the qwen3_coder incremental
stream is tested at the end.

Known gaps: none known for these parsers.
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, parser_cls, vocab
from incremental import XML_CTX, XML_VALUES, check_tag_stream
from reasoning_cases import reasoning_tests
from tag_families import one, qcall, run, tag_ctx

from tokenbridge.parsers import registry


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` (synthetic-families tokenizer,
# markers added as special tokens where the format needs them) ---------------------------------

SYN = "synthetic-families"

REASONING_CASES = [
    # (name, kwargs, vocab folder or None, text, (reasoning, content))
    ("granite_thinking_parser", {}, SYN, "a</think>\n\nb", ("a", "b")),
    ("granite_thinking_parser", {}, SYN, "only", ("only", None)),
    ("granite_thinking_parser", {}, SYN, "a<tool_call>x", ("a", "<tool_call>x")),
    ("granite_thinking_parser", {"force_nonempty_content": True}, SYN, "only", (None, "only")),
    ("granite_thinking_parser", {"force_nonempty_content": True}, SYN, "a</think>\n\n", ("a", None)),
    ("granite_thinking_parser", {"enable_thinking": False}, SYN, "\n\nx</think>", (None, "x</think>")),
    ("granite_thinking", {}, SYN, "日本</think>\né😀", ("日本", "é😀")),
]


TestReasoning = reasoning_tests(REASONING_CASES, ('granite_thinking_parser',))


def test_prompt_closes_reasoning():
    v = vocab("qwen3")
    closed = v.encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    c = ctx("qwen3", prompt=closed)
    assert parser_cls("granite_thinking_parser").reasoning_ended_in_prompt(closed, c) is True
    assert parse("granite_thinking_parser", "Hello", c) == (None, "Hello")


# -- qwen3_coder tool calls (the tag engine, ``engine/tags.py``) ------------------------------------

# (family, output text, expected content, expected calls); expectations follow vLLM 0.33's
# non-streaming extract_tool_calls for the same text.
CASES = [
    ("qwen3_coder", "The answer is 4.", "The answer is 4.", []),
    ("qwen3_coder", qcall("get_weather", city="Paris"), None, [("get_weather", '{"city": "Paris"}')]),
    ("qwen3_coder", qcall("get_weather", city="Paris", days="3", metric="true", ratio="null"),
     None, [("get_weather", '{"city": "Paris", "days": 3, "metric": true, "ratio": null}')]),
    ("qwen3_coder", qcall("get_weather", opts='{"a": 1}', ids='[1, "2"]'),
     None, [("get_weather", '{"opts": {"a": 1}, "ids": [1, "2"]}')]),
    # several calls, content before is stripped, text after the first call is dropped
    ("qwen3_coder", "  Sure!\n\n" + qcall("search", q="a") + "\n" + qcall("search", q="b") + " bye",
     "Sure!", [("search", '{"q": "a"}'), ("search", '{"q": "b"}')]),
    # non-ASCII, value newlines beyond the wrapping ones are kept
    ("qwen3_coder", qcall("search", q="日本 ☀️\n\nx"), None, [("search", '{"q": "日本 ☀️\\n\\nx"}')]),
    # unknown function names are still calls for qwen3_coder
    ("qwen3_coder", qcall("nope", a="1"), None, [("nope", '{"a": "1"}')]),
    # missing </function></tool_call>: the call is closed at the end of the output
    ("qwen3_coder", "<tool_call>\n<function=search>\n<parameter=q>\nx\n</parameter>\n",
     None, [("search", '{"q": "x"}')]),
    # length cut mid-call: the unfinished parameter is lost, the call stays
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar", None, [("get_weather", "{}")]),
    ("qwen3_coder", "Hi <tool_call>\n<function=get_wea", "Hi", [("get_wea", "{}")]),
    # an opener with no function: markup is dropped, no call
    ("qwen3_coder", "Hi <tool_call>\n</tool_call> there", "Hi  there", []),
    ("qwen3_coder", "Hi <tool_", "Hi <tool_", []),
    # reasoning markup is content when no reasoning parser is configured
    ("qwen3_coder", "<think>x</think>\n\nA" + qcall("search", q="z"), "<think>x</think>\n\nA",
     [("search", '{"q": "z"}')]),
    ("qwen3_coder", "\n\n" + qcall("search", q="z") + "\n", None, [("search", '{"q": "z"}')]),
    ("qwen3_coder", "  lead and trail  ", "  lead and trail  ", []),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert one(name, text) == (content, calls)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_random_chunkings_accumulate_to_one_shot(data):
    name, text, _, _ = data.draw(st.sampled_from(CASES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    restore = data.draw(st.booleans())
    assert run(name, pieces, restore=restore) == one(name, text)


def test_qwen_think_end_in_content_dropped_with_reasoning_parser():
    assert one("qwen3_coder", "a</think>b", reasoning_parser="qwen3") == ("ab", [])


def test_special_tokens_vanish():
    assert one("qwen3_coder", "a<|im_start|>b") == ("ab", [])


def test_snapshot_is_small_and_restorable():
    text = "Hello " + qcall("search", q="a" * 50) + "x"
    assert run("qwen3_coder", list(text), restore=True) == one("qwen3_coder", text)
    parser = registry.get_tool_parser("qwen3_coder")(tag_ctx("qwen3_coder"))
    parser.feed("Hello there, this is a long answer. " * 20, [])
    assert len(msgspec.msgpack.encode(parser.snapshot())) < 100


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

QWEN3_CASES = [
    ("<think>hm</think>\n\nHi", ("hm", "\n\nHi")),
    ("Hello there!", ("Hello there!", None)),  # starts inside reasoning
    ("Let me check.\n</think>\n\nok", ("Let me check.\n", "\n\nok")),  # trailing ws kept
    ("", (None, None)),
    ("<think>cut by length", ("cut by length", None)),  # missing end marker
    ("a<tool_call>\n{}\n</tool_call>", ("a", "<tool_call>\n{}\n</tool_call>")),  # implicit end
    ("a</think>b</think>c", ("a", "bc")),  # stray end marker in content is dropped
    ("a</think>b<think>c", ("a", "b<think>c")),  # start marker in content is text
    ("x<|im_start|>y</think><|endoftext|>z", ("xy", "z")),  # special tokens vanish
    ("日本</think>é😀", ("日本", "é😀")),
]


@pytest.mark.parametrize("text,expected", QWEN3_CASES)
def test_qwen3(text, expected):
    assert parse("qwen3", text, ctx()) == expected


def test_qwen3_thinking_off_is_all_content():
    c = ctx(kwargs={"enable_thinking": False})
    assert parse("qwen3", "<think>a</think>b", c) == (None, "<think>a</think>b")


def test_qwen3_prompt_closes_reasoning():
    v = vocab("qwen3")
    closed = v.encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    c = ctx(prompt=closed)
    assert parser_cls("qwen3").reasoning_ended_in_prompt(closed, c) is True
    assert parse("qwen3", "Hello there!", c) == (None, "Hello there!")
    # A closed block in an earlier turn does not count.
    earlier = v.encode("<|im_start|>assistant\n<think>x</think>y<|im_end|>\n<|im_start|>assistant\n")
    assert parser_cls("qwen3").reasoning_ended_in_prompt(earlier, ctx(prompt=earlier)) is False
    opened = v.encode("<|im_start|>assistant\n<think>\n")
    assert parser_cls("qwen3").reasoning_ended_in_prompt(opened, ctx(prompt=opened)) is False


def test_nemotron_force_content():
    c = ctx(kwargs={"force_nonempty_content": True})
    assert parse("nemotron_v3", "only thoughts", c) == (None, "only thoughts")
    assert parse("nemotron_v3", "t</think>answer", c) == ("t", "answer")
    off = ctx(kwargs={"enable_thinking": False})
    assert parse("nemotron_v3", "", off) == ("", None)
    assert parse("nemotron_v3", "t</think>a", ctx()) == ("t", "a")


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@st.composite
def qwen_coder_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n", "  "]))]
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "other"]))
        params = "".join(
            f"<parameter={k}>{draw(XML_VALUES)}</parameter>{draw(st.sampled_from(['', chr(10)]))}"
            for k in draw(st.lists(st.sampled_from(["path", "content", "mode", "opts", "flag", "x"]), max_size=4, unique=True))
        )
        out.append(f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>{draw(st.sampled_from(['', chr(10), ' tail']))}")
    return "".join(out)


def test_stream_adds_up_to_the_one_shot_answer():
    check_tag_stream("qwen3_coder", qwen_coder_output())


def test_tag_family_sends_string_values_as_they_arrive():
    p = registry.get_tool_parser("qwen3_coder").incremental(XML_CTX)
    steps = ["<tool_call>\n<function=write_file>\n<parameter=mode>\n06", "44\n</parameter>\n<parameter=content>\nli",
             "ne 1\n", "line 2\n</parameter>\n</function>\n</tool_call>"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{")], [(None, '"mode": 644'), (None, ', "content": "'), (None, "li")],
                    [(None, "ne 1")], [(None, "\\nline 2"), (None, '"'), (None, "}")]]
