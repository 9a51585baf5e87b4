"""FunctionGemma (``families/functiongemma.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations

from json_families import family_tests


CASES = {
    'functiongemma': [
        ('plain',
         'plain', []),
        ('<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure <start_function_call>call:get_weather{city:<escape>東京<escape>,days:<escape>3<escape>}<end_function_call> and <start_function_call>call:search{q:<escape>[1]<escape>}<end_function_call>',
         'Sure', [('get_weather', '{"city": "東京", "days": 3}'), ('search', '{"q": [1]}')]),
        ('<start_function_call>call:get_weather{city:<escape>Par',
         '', [('get_weather', '{}')]),
        ('<start_function_call>call:f{}<end_function_call>',
         '', [('f', '{}')]),
        ('<start_function_call>nope',
         '<start_function_call>nope', []),
        ('x <start_function_call>call:f{a:<escape>1<escape>}<end_function_call> tail',
         'x', [('f', '{"a": 1}')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)

