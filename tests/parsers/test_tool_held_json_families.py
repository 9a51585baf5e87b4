"""More marker + body tool-call families (granite4, granite-20b-fc, jamba, internlm, hunyuan_a13b,
ernie45, xlam, gigachat3, apertus, dots, functiongemma, lfm2) and Mistral's v11 format.

Expected values are vLLM 0.33's non-streaming answers (``extract_tool_calls`` plus the serving
layer's "no call: raw content" rule). Content is the parser's own output: the serving layer's
whitespace-only rule lives in derender.
"""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer

from test_tool_json import SYNTH, TOOLS, one, run
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

CASES = {
    'granite4': [
        ('plain',
         'plain', []),
        ('',
         '', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call> mid <tool_call>{"name": "search", "arguments": {"q": "東京 🚀"}}</tool_call> end',
         'Hi  mid  end', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call></tool_call>',
         '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call></tool_call>', []),
        ('<tool_call></tool_call>',
         '<tool_call></tool_call>', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>',
         '<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>', []),
        ('<tool_call>{"name": "f", "arguments": "raw"}</tool_call>',
         '', [('f', 'raw')]),
        ('<tool_call>{"name": "f"}</tool_call>',
         '<tool_call>{"name": "f"}</tool_call>', []),
        ('<tool_call>{"name": 1, "arguments": {}}</tool_call>',
         '<tool_call>{"name": 1, "arguments": {}}</tool_call>', []),
        ('<tool_call>{"name": "f", "arguments": null}</tool_call>',
         '<tool_call>{"name": "f", "arguments": null}</tool_call>', []),
        ('x</tool_call>y',
         'x</tool_call>y', []),
        ('<tool_call>[1]</tool_call>',
         '<tool_call>[1]</tool_call>', []),
        ('<tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
         '<tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"ci',
         '<tool_call>{"name": "get_weather", "arguments": {"ci', []),
        # whitespace-only content next to calls: derender's gate makes it null, as vLLM does
        ('  \n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
         '  \n', [('get_weather', '{"city": "Paris"}')]),
    ],
    'granite-20b-fc': [
        ('plain',
         'plain', []),
        ('<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('pre <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}} junk <function_call>{"name": "search", "arguments": {"q": "東京 🚀"}}',
         'pre ', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<function_call>{"name": "get_weather", "parameters": {"city": "Paris"}}',
         '<function_call>{"name": "get_weather", "parameters": {"city": "Paris"}}', []),
        ('<function_call> {"name": "f", "arguments": "s"}',
         '', [('f', '"s"')]),
        ('<function_call> nope',
         '<function_call> nope', []),
        ('<function_call> {"name": "get_weather", "arguments": {"ci',
         '<function_call> {"name": "get_weather", "arguments": {"ci', []),
        ('<function_call>{"arguments": {}}',
         '<function_call>{"arguments": {}}', []),
        ('<function_call>[1]',
         '<function_call>[1]', []),
        ('a <function_ b',
         'a <function_ b', []),
    ],
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
    'internlm': [
        ('plain',
         'plain', []),
        ('<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Let me check.<|action_start|><|plugin|>\n{"name": "search", "arguments": {"q": "東京 🚀"}}<|action_end|>',
         'Let me check.', [('search', '{"q": "東京 🚀"}')]),
        ('<|action_start|><|plugin|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|action_start|><|plugin|>{"name": "f", "parameters": {"a": 1}, "arguments": {"b": 2}}<|action_end|>',
         '', [('f', '{"a": 1}')]),
        ('<|action_start|><|plugin|>{"name": "f"}<|action_end|>',
         '', [('f', '{}')]),
        ('<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci',
         '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci', []),
    ],
    'hunyuan_a13b': [
        ('plain',
         'plain', []),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure.\n<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_calls> after',
         'Sure.\n', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', []),
        ('<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>',
         '<tool_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_calls>', []),
        ('<tool_calls>bad</tool_calls>x<tool_calls>[{"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_calls>',
         '<tool_calls>bad</tool_calls>x', [('search', '{"q": "東京 🚀"}')]),
        ('<think><tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls></think> rest',
         '<think><tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls></think> rest', []),
        ('<tool_calls>[{"name": "f", "arguments": "s"}, {"name": "g"}, 3]</tool_calls>',
         '', [('f', 's')]),
        ('<tool_calls>[{"name": "f", "arguments": 5}]</tool_calls>',
         '<tool_calls>[{"name": "f", "arguments": 5}]</tool_calls>', []),
        ('<tool_calls>[]</tool_calls>',
         '<tool_calls>[]</tool_calls>', []),
        ('助手：hello',
         '助手：hello', []),
    ],
    'ernie45': [
        ('plain',
         'plain', []),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('ok\n\n\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n<tool_call>{"name": "search", "arguments": {"q": "東京 🚀"}}</tool_call>',
         'ok', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', []),
        ('hi\n<tool_call>junk',
         'hi', []),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>',
         '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>', []),
        ('<tool_call>{"arguments": {"a": 1}}</tool_call>',
         '', [('', '{"a": 1}')]),
        ('<tool_call>{"name": "f"}</tool_call>',
         '', [('f', '{}')]),
        ('text\n\nmore\n',
         'text\n\nmore\n', []),
        ('<tool_call>{"name": 3}</tool_call>',
         '<tool_call>{"name": 3}</tool_call>', []),
    ],
    'xlam': [
        ('plain',
         'plain', []),
        ('[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"q": "東京 🚀"}}]',
         '', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('```json\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n```',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Sure!\n```json\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n``` done',
         'Sure!\n done', [('get_weather', '{"city": "Paris"}')]),
        ('<tool_call>[{"name": "search", "arguments": {"q": "東京 🚀"}}]</tool_call>',
         '', [('search', '{"q": "東京 🚀"}')]),
        ('[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]\nbye',
         'bye', [('get_weather', '{"city": "Paris"}')]),
        ('<think>hmm</think>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '<think>hmm</think>', [('get_weather', '{"city": "Paris"}')]),
        ('<think>hmm</think>text <tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>',
         '<think>hmm</think>', [('get_weather', '{"city": "Paris"}')]),
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
        ('[{"name": "get_weather", "arguments": {"ci',
         '[{"name": "get_weather", "arguments": {"ci', []),
        ('[{"name": "f", "arguments": "s"}, {"x": 1}]',
         '', [('f', 's')]),
        ('[{"name": "f", "arguments": 3}]',
         '[{"name": "f", "arguments": 3}]', []),
        ('[1, 2]',
         '[1, 2]', []),
    ],
    'gigachat3': [
        ('plain',
         'plain', []),
        ('<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('Hello<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "search", "arguments": {"q": "東京 🚀"}}</s>',
         'Hello', [('search', '{"q": "東京 🚀"}')]),
        ('pre<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
         'pre', [('get_weather', '{"city": "Paris"}')]),
        ('function call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}',
         'function call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', [('get_weather', '{"city": "Paris"}')]),
        ('x<|function_call|>{"name": "f", "arguments": "s"}',
         'x<|function_call|>{"name": "f", "arguments": "s"}', []),
        ('x<|function_call|>{"name": "get_weather", "arguments": {"ci',
         'x<|function_call|>{"name": "get_weather", "arguments": {"ci', []),
        ('x<|function_call|>{"name": "f", "arguments": {"a": "line\nbreak"}}',
         'x', [('f', '{"a": "line\\nbreak"}')]),
        ('a<|message_sep|>b',
         'a<|message_sep|>b', []),
    ],
    'apertus': [
        ('plain',
         'plain', []),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('I will check. <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"search": {"q": "東京 🚀"}}]<|tools_suffix|> after',
         'I will check.\nafter', [('get_weather', '{"city": "Paris"}'), ('search', '{"q": "東京 🚀"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Par',
         '', [('get_weather', '{"city": "Par"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}] trailing',
         'trailing', [('get_weather', '{"city": "Paris"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris", "days": 1',
         '', [('get_weather', '{"city": "Paris", "days": 1}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris", "da',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"sea',
         '', [('get_weather', '{"city": "Paris"}')]),
        ('<|tools_prefix|>',
         '<|tools_prefix|>', []),
        ('<|tools_prefix|>garbage<|tools_suffix|>',
         '<|tools_prefix|>garbage<|tools_suffix|>', []),
        ('<|tools_prefix|>[{}, 1]<|tools_suffix|>',
         '', []),
        ('<|tools_prefix|>{"f": {"a": [1, 2, tr',
         '', [('f', '{"a": [1, 2, true]}')]),
        ('<|tools_prefix|>[{"f": {"a": -1.5e',
         '', [('f', '{"a": -1.5}')]),
        ('<|tools_prefix|>[{"f": {"a": "x\\u00',
         '', [('f', '{"a": "x"}')]),
        ('<|tools_prefix|>[{"f": {"a": 12',
         '', [('f', '{"a": 12}')]),
    ],
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


@pytest.mark.parametrize(
    "parser,text,content,calls",
    [(p, t, c, calls) for p, rows in CASES.items() for t, c, calls in rows],
)
def test_family(parser, text, content, calls):
    assert one(parser, text) == (content, calls)


def test_internlm_error_cases_stay_content():
    """vLLM fails the request (uncaught error); the text is kept as content instead."""
    for text in (
        '<|action_start|><|plugin|>{"name": "f", "parameters": {}}<|action_start|><|plugin|>{}',
        '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"ci',
    ):
        assert one("internlm", text) == (text, [])
        assert one("interns1", text) == (text, [])


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


def test_ids():
    def ids(name, text):
        p = registry.get_tool_parser(name)(ParseContext(tools=TOOLS, tool_choice="auto"))
        p.feed(text, [])
        return [t.id for t in p.finish().tool_calls]

    W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    x = ids("xlam", f"[{W}, {W}]")
    assert [i[:7] for i in x] == ["call_0_", "call_1_"] and all(len(i) == 23 for i in x)
    h = ids("hunyuan_a13b", f"<tool_calls>[{W}]</tool_calls>")
    assert h[0].startswith("call_") and len(h[0]) == 21
    assert ids("granite4", f"<tool_call>{W}</tool_call>") == [None]


def test_flags():
    for name in ("dots", "mistral"):
        assert registry.get_tool_parser(name).supports_required_and_named is False
    for name in CASES:
        if name != "dots":
            cls = registry.get_tool_parser(name)
            assert cls.supports_required_and_named is True and cls.engine_based is False
    assert registry.get_tool_parser("mistral").engine_based is True
    assert registry.get_tool_parser("apertus2509") is registry.get_tool_parser("apertus")


def test_streams_content_before_marker():
    p = registry.get_tool_parser("ernie45")(ParseContext(tools=TOOLS, tool_choice="auto"))
    assert p.feed("Answer\n\n", []).content == "Answer"
    assert p.feed("<tool_", []).content == ""
    p = registry.get_tool_parser("granite4")(ParseContext(tools=TOOLS, tool_choice="auto"))
    assert p.feed("a</tool_call>b<tool_call>", []).content == "a"


# ── Mistral v11+ ([ARGS] token) ───────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def v11_vocab(tmp_path_factory):
    """The synthetic tokenizer plus Mistral's v11 control tokens (a real tokenizers tokenizer)."""
    folder = tmp_path_factory.mktemp("mistral-v11")
    tok = Tokenizer.from_file(str(SYNTH / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True) for t in ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]")])
    tok.save(str(folder / "tokenizer.json"))
    config = json.loads((SYNTH / "tokenizer_config.json").read_text())
    config["additional_special_tokens"] = ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "</s>"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    vocab = HFTokenizer(folder, config)
    yield vocab
    shutil.rmtree(folder, ignore_errors=True)


MW = '{"city": "Paris"}'
MISTRAL_V11 = [
    ("Bonjour.", "Bonjour.", []),
    (f"Hi [TOOL_CALLS]get_weather[ARGS]{MW}", "Hi", [("get_weather", MW)]),
    (f'[TOOL_CALLS]get_weather[ARGS]{MW}[TOOL_CALLS]search[ARGS]{{"q": "東京 🚀"}}', "",
     [("get_weather", MW), ("search", '{"q": "東京 🚀"}')]),
    (f"[TOOL_CALLS]get_weather{MW}", "", [("get_weather", MW)]),
    (f"[TOOL_CALLS]get_weather[ARGS]{MW} trailing text", "", [("get_weather", MW)]),
    ('[TOOL_CALLS]get_weather[ARGS]{"city": "Par', "", [("get_weather", '{"city": "Par')]),
    ("[TOOL_CALLS]get_weather[ARGS]", "", [("get_weather", "{}")]),
    ("[TOOL_CALLS]get_weather", "", [("get_weather", "{}")]),
    ('[TOOL_CALLS]unknown_fn[ARGS]{"a": 1}', "", [("unknown_fn", '{"a": 1}')]),
    (f"  \n[TOOL_CALLS]get_weather[ARGS]{MW}", "", [("get_weather", MW)]),
    ('[TOOL_CALLS] get_weather [ARGS] {"city": "Paris", "days": "3"}', "",
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    (f"[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{MW}", "", [("get_weatherabc123XYZ", MW)]),
    ("a</s>b", "ab", []),
    ('[TOOL_CALLS][ARGS]{"a": 1}', "", [("", '{"a": 1}')]),
    ("[TOOL_CALLS]get_weather[ARGS]not json", "", [("get_weather", "not json")]),
    (f"x [TOOL_CALLS]get_weather[ARGS]{MW}[TOOL_CALLS]bogus[ARGS]{{}}", "x",
     [("get_weather", MW), ("bogus", "{}")]),
    ('pre {"a": 1} [TOOL_CALLS]search[ARGS]{"q": 1}', 'pre {"a": 1}', [("search", '{"q": "1"}')]),
    (f"[TOOL_CALLS]get_we{{ather[ARGS]{MW}", "", [("get_we", f"{{ather[ARGS]{MW}")]),
    (f"[TOOL_CALLS][TOOL_CALLS]get_weather[ARGS]{MW}", "", [("[TOOL_CALLS]get_weather", MW)]),
    ("a [ARGS] b", "a [ARGS] b", []),
    ("[TOOL_CALLS]  ", "", [("", "{}")]),
    ("[TOOL_CALLS]", "", []),
    ("[TOOL_CALLS]get_</s>weather[ARGS]{\"city\": \"P</s>aris\"}", "", [("get_weather", MW)]),
    ('[TOOL_CALLS]search[ARGS]{"q": "a"}{"q": "b"}', "", [("search", '{"q": "a"}')]),
]


def run_v11(vocab, pieces, tool_choice="auto", restore=False):
    import test_tool_json

    saved, test_tool_json.VOCAB = test_tool_json.VOCAB, vocab
    try:
        return run("mistral", pieces, tool_choice=tool_choice, restore=restore)
    finally:
        test_tool_json.VOCAB = saved


@pytest.mark.parametrize("text,content,calls", MISTRAL_V11)
def test_mistral_v11(v11_vocab, text, content, calls):
    assert run_v11(v11_vocab, [text]) == (content, calls)


def test_mistral_v11_tool_choice_none(v11_vocab):
    text = f"x [TOOL_CALLS]get_weather[ARGS]{MW} tail"
    assert run_v11(v11_vocab, [text], tool_choice="none") == ("x ", [])


def test_mistral_older_format_unchanged_without_args_token():
    assert one("mistral", f"[TOOL_CALLS]get_weather[ARGS]{MW}") == ("get_weather[ARGS]" + MW, [])


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(MISTRAL_V11), cuts=st.lists(st.integers(0, 90), max_size=6), restore=st.booleans())
def test_mistral_v11_chunking(v11_vocab, case, cuts, restore):
    text = case[0]
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
    assert run_v11(v11_vocab, pieces, restore=restore) == run_v11(v11_vocab, [text])


ALL = [(p, t) for p, rows in CASES.items() for t, _, _ in rows]


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(ALL), cuts=st.lists(st.integers(0, 160), max_size=8), restore=st.booleans())
def test_chunking_invariance(case, cuts, restore):
    name, text = case
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)])]
    assert run(name, pieces, restore=restore) == one(name, text)
