"""Jamba (``families/jamba.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps: none known (its incremental stream is tested at the end).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import split
from incremental import hermes_output, incremental, whole
from json_families import family_tests


CASES = {
    'jamba': [
        ('plain',
         'plain', []),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_calls> after <tool_calls>[]</tool_calls>',
         'Sure ', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', []),
        ('<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>',
         '<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>', []),
        (' <tool_calls>[]</tool_calls>',
         ' ', []),  # vLLM: null (tools_called with no call); derender keeps the blank
        ('x <tool_calls>[]</tool_calls>',
         'x ', []),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"ci</tool_calls>',
         '<tool_calls>[{"name": "get_weather", "arguments": {"ci</tool_calls>', []),
        ('<tool_calls>[{"name": "get_weather", "parameters": {"city": "Paris"}}]</tool_calls>',
         '<tool_calls>[{"name": "get_weather", "parameters": {"city": "Paris"}}]</tool_calls>', []),
        ('<tool_calls>[{"name": "f", "arguments": "s"}]</tool_calls>',
         '', [('f', '"s"')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 40)


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@settings(max_examples=150, deadline=None)
@given(hermes_output("<tool_calls>", "</tool_calls>").filter(lambda t: t.count("<tool_calls>") == 1),
       st.lists(st.integers(0, 10_000), max_size=10))
def test_jamba_streams_add_up_to_the_one_shot_answer(text, cuts):
    text = text.replace("<tool_calls>", "<tool_calls>[", 1).replace("</tool_calls>", "]</tool_calls>", 1)
    want = whole("jamba", text)
    got = incremental("jamba", split(text, cuts))
    if want.calls:
        assert (got.content or None, got.named_calls()) == (want.content or None, want.named_calls())
    assert incremental("jamba", list(text), restore=False) == incremental("jamba", [text])
