"""Olmo 3 (``families/olmo3.py``): reasoning against vLLM 0.33's non-streaming
``extract_reasoning`` (run on the installed vLLM with Qwen3's real tokenizer), and chunking
invariance. Its one-shot tool calls are the pythonic ``olmo3`` variant (``test_pythonic.py``); its
incremental stream (``--tool-call-streaming incremental``) is tested at the end.

Known gaps: none known.
"""

from __future__ import annotations

from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, parser_cls, split, vocab
from incremental import py_value, restored
from reasoning_cases import reasoning_tests

QWEN = "qwen3"  # a real tokenizer with ``<think>``/``</think>`` as tokens

REASONING_CASES = [
    # (name, chat_template_kwargs, vocab folder, text, (reasoning, content))
    ('olmo3', {}, QWEN, '<think>a</think>b', ('a', 'b')),
    ('olmo3', {}, QWEN, 'a</think>b', ('a', 'b')),
    ('olmo3', {}, QWEN, 'no end marker', (None, 'no end marker')),
    ('olmo3', {}, QWEN, '', (None, '')),
    ('olmo3', {}, QWEN, 'x<think>a</think>b', ('x<think>a', 'b')),
    ('olmo3', {}, QWEN, '<think></think>', (None, None)),
    ('olmo3', {}, QWEN, 'a</think>b</think>c', ('a', 'b</think>c')),
    ('olmo3', {}, QWEN, 'a<tool_call>x</tool_call></think>b', ('a<tool_call>x</tool_call>', 'b')),
    ('olmo3', {}, QWEN, '日本</think>é😀', ('日本', 'é😀')),
    ('olmo3', {}, QWEN, '<think>cut', (None, '<think>cut')),
]


TestReasoning = reasoning_tests(REASONING_CASES, ('olmo3',), alphabet="<>/thinkaswer \n日", switches=({},),
                                folder=QWEN, max_cut=80, chunk_examples=150, random_examples=75)


def test_olmo3_prompt_end_marker_as_text_pieces():
    """Olmo 3 spots ``</think>`` in the prompt by its pieces ``</`` ``think`` ``>``."""
    v = vocab(QWEN)
    ids = [v.token_to_id(t) for t in ("</", "think", ">")]
    assert None not in ids
    c = ctx(QWEN)
    cls = parser_cls("olmo3")
    assert cls.reasoning_ended_in_prompt([7, *ids, 9], c) is True
    assert cls.reasoning_ended_in_prompt([7, *ids[:2]], c) is False
    # The text split does not depend on the prompt.
    assert parse("olmo3", "a</think>b", ctx(QWEN, prompt=[*ids])) == ("a", "b")


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------
# Olmo 3 incremental calls: one call per line (or per line of a ``<function_calls>`` block),
# read as vLLM's list of them, adding up to the one-shot answer for every split of a well-formed
# output; other outputs get the same answer for every split.

_WS = st.sampled_from(["", " ", "\t"])

stream = partial(restored, "olmo3")


@st.composite
def olmo3_output(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["f", "get_weather", "search"]))
        keys = draw(st.lists(st.sampled_from(["a", "city", "q"]), unique=True, max_size=3))
        # values on one line: vLLM joins the lines with ", "
        args = [f"{k}={draw(py_value(1).filter(lambda v: chr(10) not in v and chr(13) not in v))}" for k in keys]
        lines.append(f"{draw(_WS)}{name}({', '.join(args)}){draw(_WS)}")
    body = draw(st.sampled_from(["\n", "\n\n", "\r\n"])).join(lines)
    if draw(st.booleans()):
        head = draw(st.sampled_from(["", "Let me check.\n", "Sure: "]))
        tail = draw(st.sampled_from(["", "\n", " done"]))
        return f"{head}<function_calls>\n{body}\n</function_calls>{tail}"
    return draw(st.sampled_from(["", "\n"])) + body + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=300, deadline=None)
@given(olmo3_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_olmo3_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = stream([text], incremental=False)
    got = stream(split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content or "", want.named_calls())
    else:
        assert got == stream([text])
    assert stream(list(text)) == stream([text])


@settings(max_examples=200, deadline=None)
@given(olmo3_output(), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_truncated_olmo3_output_gets_the_same_answer_for_every_split(text, cut, cuts):
    text = text[: cut % (len(text) + 1)]
    got = stream(split(text, cuts))
    assert got == stream([text]) == stream(list(text))
    if not got.calls:
        assert got.content == (stream([text], incremental=False).content or "")


def test_prose_is_content():
    for text in ("Just prose.\nTwo lines.", "<function_calls>\nnot a call\n</function_calls>"):
        assert stream(list(text)).content == text == stream([text], incremental=False).content
