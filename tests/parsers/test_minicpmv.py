"""MiniCPM-V (``minicpmv``): the Qwen3 engine row, passthrough markers, escaped newlines.

Expected values are vLLM 0.33's one-shot ``parse`` of its composed MiniCPM-V parser
(``--reasoning-parser minicpmv``, with ``--tool-call-parser qwen3_coder`` where a case has tools),
run in the oracle venv on the qwen3 tokenizer. The pipeline under test is derender's:
``ChoiceParser(OutputParser(minicpmv, qwen3_coder))``; the escaped-newline recovery of the
content runs as the reasoning parser's ``content_filter``, applied last by ``ChoiceParser``.

Known gaps: none known (a reasoning-only family; its tool calls are qwen3_coder's).
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, vocab
from feeding import feed
from tokenbridge.derender.parsing import ChoiceParser
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.output import OutputParser
from tokenbridge.parsers.families.minicpmv import EscapedNewlines, MiniCPMVReasoningParser

registry.load_all()

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
CALL = "<tool_call>\n<function=get>\n<parameter=q>\nline1\\nline2\n</parameter>\n</function>\n</tool_call>"


def _context(kwargs: dict, tools: bool, prompt: list[int] | None = None) -> ParseContext:
    return ParseContext(
        tools=TOOLS if tools else None,
        tool_choice="auto" if tools else "none",
        chat_template_kwargs=kwargs,
        prompt_token_ids=prompt or [],
        vocab=vocab("qwen3"),
        reasoning_parser="minicpmv",
    )


def _choice_parser(c: ParseContext, tools: bool) -> ChoiceParser:
    tcls = registry.get_tool_parser("qwen3_coder")
    tool = tcls(c) if tools else None
    inner = OutputParser(c, MiniCPMVReasoningParser(c), tool)
    return ChoiceParser(inner, False, True, engine=tool is not None and tcls.engine_based)


def run(
    kwargs: dict,
    tools: bool,
    text: str,
    chunks: list[str] | None = None,
    prompt: list[int] | None = None,
):
    """Feed the chunks (a fresh parser restored from the snapshot after each) and return
    vLLM's message fields: reasoning, content, [(name, arguments)]."""
    c = _context(kwargs, tools, prompt)
    fed = feed(lambda: _choice_parser(c, tools), [text] if chunks is None else chunks, restore=True)
    return (*fed.message(), fed.named_calls())


# (name, chat_template_kwargs, tools (qwen3_coder, tool_choice auto), text, vLLM's answer)
CASES = [
    ('plain reasoning and content', {}, False, 'think\\nmore</think>\\n\\nAnswer\\nend', ('think\nmore', '\n\nAnswer\nend', [])),
    ('no end marker', {}, False, 'cut by\\nlength', ('cut by\nlength', None, [])),
    ('empty', {}, False, '', (None, None, [])),
    ('explicit start marker', {}, False, '<think>\\nr\\n</think>\\n\\nc', ('\nr\n', '\n\nc', [])),
    ('code fence keeps escapes', {}, False, "</think>Run:\\n```py\nprint('a\\nb')\n```\\nDone", (None, "Run:\n```py\nprint('a\\nb')\n```\nDone", [])),
    ('inline code keeps escapes', {}, False, '</think>use `\\n` for newline\\nok', (None, 'use `\\n` for newline\nok', [])),
    ('dollar math', {}, False, '</think>$a\\nb$ and $$x\\ny$$\\nz', (None, '$a\\nb$ and $$x\\ny$$\nz', [])),
    ('latex parens and brackets', {}, False, '</think>\\(a\\nb\\) \\[c\\nd\\]\\ne', (None, '\\(a\\nb\\) \\[c\\nd\\]\ne', [])),
    ('backslash runs stay', {}, False, '</think>a\\\\nb\\\\\\nc', (None, 'a\\\\nb\\\\\\nc', [])),
    ('crlf and cr', {}, False, 'r\\r\\nx</think>a\\r\\nb\\rc', ('r\nx', 'a\nb\nc', [])),
    ('trailing backslash', {}, False, 'r\\</think>c\\', ('r\\', 'c\\', [])),
    ('unclosed fence', {}, False, '</think>```\na\\nb', (None, '```\na\\nb', [])),
    ('escapes inside reasoning code', {}, False, '`x\\n`\\n</think>c', ('`x\\n`\n', 'c', [])),
    ('passthrough markers', {}, False, 'a<|im_end|>b<reserved_12>c<|reserved_15|></think>d<reserved_13>e<|im_end|>', ('abc', 'de', [])),
    ('reserved_16 is text', {}, False, '</think>a<reserved_16>b', (None, 'a<reserved_16>b', [])),
    ('special tokens vanish', {}, False, 'x<|im_start|>y</think><|endoftext|>z', ('xy', 'z', [])),
    ('stray end marker in content dropped', {}, False, 'a</think>b</think>c', ('a', 'bc', [])),
    ('start marker in content is text', {}, False, 'a</think>b<think>c', ('a', 'b<think>c', [])),
    ('thinking off: all content', {'enable_thinking': False}, False, 'Hello\\nworld', (None, 'Hello\nworld', [])),
    ('thinking off: think span dropped', {'enable_thinking': False}, False, '<think>\\nhidden\\n</think>\\n\\nAnswer', (None, '\n\nAnswer', [])),
    ('thinking off: unclosed think swallows', {'enable_thinking': False}, False, 'a<think>b', (None, 'a', [])),
    ('thinking off: end marker dropped', {'enable_thinking': False}, False, 'a</think>b', (None, 'ab', [])),
    ('thinking off: passthrough', {'enable_thinking': False}, False, 'a<|im_end|>b<|reserved_14|>', (None, 'ab', [])),
    ('tool call keeps escaped args', {}, True, 'r</think>Sure.\\n' + CALL, ('r', 'Sure.\n', [('get', '{"q": "line1\\\\nline2"}')])),
    ('tool call in reasoning ends it', {}, True, 'plan\\n' + CALL, ('plan\n', None, [('get', '{"q": "line1\\\\nline2"}')])),
    ('tool call then content', {}, True, '</think>' + CALL + '\\nafter `\\n`', (None, None, [('get', '{"q": "line1\\\\nline2"}')])),
    ('two tool calls', {}, True, '</think>' + CALL + '\n' + CALL.replace('line1', '日本é'), (None, None, [('get', '{"q": "line1\\\\nline2"}'), ('get', '{"q": "日本é\\\\nline2"}')])),
    ('tool call missing end marker', {}, True, '</think>x\\n<tool_call>\n<function=get>\n<parameter=q>\nv', (None, 'x\n', [('get', '{}')])),
    ('tool call thinking off', {'enable_thinking': False}, True, '<think>h</think>ok\\n' + CALL, (None, 'ok\n', [('get', '{"q": "line1\\\\nline2"}')])),
    ('tool call with reserved markers', {}, True, '</think><reserved_12>' + CALL + '<|im_end|>', (None, None, [('get', '{"q": "line1\\\\nline2"}')])),
    ('non-ascii', {}, False, '日本\\n😀</think>é\\nü `日\\n`', ('日本\n😀', 'é\nü `日\\n`', [])),
    ('blank-looking content before a call', {}, True, '</think>\\n\\n' + CALL, (None, '\n\n', [('get', '{"q": "line1\\\\nline2"}')])),
]

@pytest.mark.parametrize("name,kwargs,tools,text,expected", CASES, ids=[c[0] for c in CASES])
def test_one_shot_matches_vllm(name, kwargs, tools, text, expected):
    assert run(kwargs, tools, text) == expected


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(CASES), data=st.data())
def test_any_chunking_accumulates_to_one_shot(case, data):
    _, kwargs, tools, text, _ = case
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=10))
    pts = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    assert run(kwargs, tools, text, chunks) == run(kwargs, tools, text)


_PIECES = [
    "<think>", "</think>", "```", "`", "$", "$$", "\\(", "\\)", "\\[", "\\]", "\\n", "\\r\\n",
    "\\r", "\\\\", "\\", "n", "<|im_end|>", "<reserved_12>", "<|reserved_13|>", "x", "日",
    " ", "\n", CALL, "<tool_call>", "<function=get>",
]


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=14),
    kwargs=st.sampled_from([{}, {"enable_thinking": False}]),
    tools=st.booleans(),
    data=st.data(),
)
def test_random_outputs_chunking(pieces, kwargs, tools, data):
    text = "".join(pieces)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=8))
    pts = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    assert run(kwargs, tools, text, chunks) == run(kwargs, tools, text)


# -- the escaped-newline recovery alone (vLLM's ``recover_newlines``) --------------------------

RECOVER = [
    ("a\\nb", "a\nb"),
    ("a\\\\nb", "a\\\\nb"),
    ("\\r\\n", "\n"),
    ("\\r\\\\n", "\n\\\\n"),
    ("``x\\n`\\n", "``x\n`\\n"),
    ("```\\n```\\n", "```\\n```\n"),
    ("$$$\\n$\\n", "$$$\\n$\\n"),
    ("\\(\\n\\)\\n", "\\(\\n\\)\n"),
    ("\\[\\n\\]\\n", "\\[\\n\\]\n"),
    ("\\", "\\"),
    ("\\r", "\n"),
    ("`", "`"),
    ("$\\n", "$\\n"),
    ("\\x\\n", "\\x\n"),
    ("\\\\\\n", "\\\\\\n"),
]


@pytest.mark.parametrize("text,expected", RECOVER)
def test_recover_matches_vllm(text, expected):
    f = EscapedNewlines()
    assert f.feed(text) + f.finish() == expected


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(st.sampled_from(["`", "$", "\\", "n", "r", "(", ")", "[", "]", " ", "x", "```"]),
                  max_size=30).map("".join),
    data=st.data(),
)
def test_recover_chunking(text, data):
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=8))
    pts = sorted(set(cuts))
    f = EscapedNewlines()
    out = ""
    for a, b in zip([0, *pts], [*pts, len(text)]):
        out += f.feed(text[a:b])
        snap = f.snapshot()
        assert len(snap.held) <= 3 or snap.held.strip("\\") == ""
        f = EscapedNewlines()
        f.restore(snap)
    whole = EscapedNewlines()
    assert out + f.finish() == whole.feed(text) + whole.finish()


def test_restore_rejects_bad_state():
    with pytest.raises(ValueError):
        EscapedNewlines().restore(["x", ""])
    c = _context({}, False)
    with pytest.raises(ValueError):
        _choice_parser(c, False).restore([[None, None], "", False, 0])


def test_snapshot_holds_only_the_undecided_tail():
    c = _context({}, True)
    p = _choice_parser(c, True)
    d = p.feed("r\\nr</think>long content\\nthen `code", [])
    assert (d.reasoning, d.content) == ("r\nr", "long content\nthen `code")
    snap = p.snapshot()
    assert msgspec.to_builtins(snap.filter) == ["`", ""]
    assert "long content" not in repr(snap)


# -- the prompt check (render's reasoning_ended), vs vLLM's is_reasoning_end ----------------

PROMPTS = [
    ({}, "<|im_start|>assistant\n", False),
    ({}, "<|im_start|>assistant\n<think>\n", False),
    ({}, "<|im_start|>assistant\n<think>\n\n</think>\n\n", True),
    ({}, "<think>a</think><|im_start|>assistant\n", True),  # no turn boundaries in this grammar
    ({}, "<tool_call>x<|im_end|>", True),
    ({"enable_thinking": False}, "<|im_start|>assistant\n", True),
    ({"enable_thinking": False}, "<|im_start|>assistant\n<think>\n", False),
    ({"enable_thinking": False}, "<think>x</think><|im_end|><think>", False),
]


@pytest.mark.parametrize("kwargs,prompt,expected", PROMPTS)
def test_reasoning_ended_in_prompt(kwargs, prompt, expected):
    ids = vocab("qwen3").encode(prompt)
    c = ctx("qwen3", kwargs, ids)
    assert MiniCPMVReasoningParser.reasoning_ended_in_prompt(ids, c) is expected
    # The prompt never moves the output's start: vLLM's grammar has no turn boundaries.
    assert run(kwargs, False, "a\\nb</think>c", prompt=ids)[0] == ("a\nb" if kwargs == {} else None)
