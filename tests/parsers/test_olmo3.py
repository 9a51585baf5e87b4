"""Olmo 3 (``families/olmo3.py``): reasoning against vLLM 0.33's non-streaming
``extract_reasoning`` (run on the installed vLLM with Qwen3's real tokenizer), and chunking
invariance. Its tool calls are the pythonic ``olmo3`` variant (``test_pythonic.py``).

Known gaps:
- its tool calls stream whole (``pythonic`` has no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations


from feeding import ctx, parse, parser_cls, vocab
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
