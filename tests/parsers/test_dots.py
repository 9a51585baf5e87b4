"""dots.llm (``families/dots.py``) tool calls against vLLM 0.33's non-streaming answers
(``extract_tool_calls`` plus the serving layer's "no call: raw content" rule), and chunking
invariance. Content is the parser's own output: the serving layer's whitespace-only rule lives
in derender.

Known gaps:
- tool calls stream whole (no ``--tool-call-streaming incremental`` parser).
- dots keeps its own argument value conversion, because vLLM's parser converts differently
  (``engine/schema.py``).
"""

from __future__ import annotations

from json_families import family_tests, one


CASES = {
    'dots': [
        ('plain',
         'plain', []),
        ('<dots_function_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n</dots_function_call>',
         '', [('get_weather', '{"city": "Paris", "days": 3}')]),
        (' Sure. <dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</dots_function_call> x <dots_function_call>{"name": "search", "arguments": {"q": "東京 🚀"}}</dots_function_call>',
         'Sure.', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<dots_function_call><invoke name="nope"><parameter name="a">1</parameter></invoke></dots_function_call>',
         '<dots_function_call><invoke name="nope"><parameter name="a">1</parameter></invoke></dots_function_call>', []),
        ('<dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '<dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
        ('<dots_function_call>[1]</dots_function_call>',
         '<dots_function_call>[1]</dots_function_call>', []),
        ('<dots_function_call><invoke name="search"><parameter name="q">null</parameter></invoke><invoke name=\'get_weather\'><parameter name="days">x</parameter></invoke></dots_function_call>',
         '', [('search', '{"q": null}'), ('get_weather', '{"days": "x"}')]),
    ],
}

test_family, test_flags, test_chunking_invariance = family_tests(CASES, 30, required_and_named=False)


def test_dots_needs_known_tool():
    text = '<dots_function_call><invoke name="search"><parameter name="q">x</parameter></invoke></dots_function_call>'
    assert one("dots", text)[1] == [("search", '{"q": "x"}')]
    assert one("dots", text, tools=None)[1] == []


def test_dots_schema_types():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "$defs": {"N": {"type": "number"}},
        "properties": {"n": {"$ref": "#/$defs/N"}, "b": {"type": "boolean"}, "o": {"type": "object"},
                       "s": {"anyOf": [{"type": "null"}, {"type": ["integer", "null"]}]}}}}}]
    text = ('<dots_function_call><invoke name="f"><parameter name="n">2.0</parameter>'
            '<parameter name="b">1</parameter><parameter name="o">{"k": [1]}</parameter>'
            '<parameter name="s">07</parameter><parameter name="x">3</parameter></invoke></dots_function_call>')
    assert one("dots", text, tools=tools)[1] == [("f", '{"n": 2, "b": true, "o": {"k": [1]}, "s": 7, "x": "3"}')]
