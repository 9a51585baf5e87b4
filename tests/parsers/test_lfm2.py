"""LFM2 (``families/lfm2.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
"""

from __future__ import annotations

from json_families import family_tests


CASES = {
    'lfm2': [
        ('plain',
         'plain', []),
        ('<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure. <|tool_call_start|>[get_weather(city="東京"), search(q="x", n=-2)]<|tool_call_end|> It is sunny.',
         'Sure.\nIt is sunny.', [('get_weather', '{"city": "東京"}'), ('search', '{"q": "x", "n": -2}')]),
        ('<|tool_call_start|>[get_weather(city="Paris")]',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|tool_call_start|>[get_weather(city="Par',
         '<|tool_call_start|>[get_weather(city="Par', []),
        ('<|tool_call_start|>[]<|tool_call_end|>',
         '<|tool_call_start|>[]<|tool_call_end|>', []),
        ('<|tool_call_start|>[f(a=1)]<|tool_call_end|>echo [f(a=1)]<|tool_call_end|> real tail',
         'real tail', [('f', '{"a": 1}')]),
        ('<|tool_call_start|>not a list<|tool_call_end|>',
         '<|tool_call_start|>not a list<|tool_call_end|>', []),
        ('<|tool_call_start|>[f(x)]<|tool_call_end|>',
         '', [('f', '{}')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30)

