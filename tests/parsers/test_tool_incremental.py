"""Incremental tool-call streaming: id and name as soon as known, then argument deltas that add
up byte for byte to the one-shot answer for every split of a well-formed output; a malformed or
truncated output gets the documented answer, the same for every split."""

from __future__ import annotations

import json

import msgspec
import pytest
from feeding import accumulate, feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.json_stream import canonical

from parsers.engine.test_json_stream import JSON_TEXT, json_string

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
_WS = st.text(" \n", max_size=2)


def whole(name: str, text: str):
    return feed(lambda: registry.get_tool_parser(name)(CTX), [text])


def incremental(name: str, pieces: list[str], restore: bool = True):
    return feed(lambda: registry.get_tool_parser(name).incremental(CTX), pieces, restore=restore)




@st.composite
def hermes_output(draw, start="<tool_call>", end="</tool_call>") -> str:
    out = [draw(st.sampled_from(["", "Sure.\n", "Let me check <tool", "日本 😀 "]))]
    for _ in range(draw(st.integers(1, 3))):
        args = draw(JSON_TEXT)
        name = draw(json_string())
        members = [f'"name"{draw(_WS)}:{draw(_WS)}{name}', f'"arguments"{draw(_WS)}:{draw(_WS)}{args}']
        if draw(st.booleans()):
            members.insert(draw(st.integers(0, 2)), f'"id": {draw(JSON_TEXT)}')
        if draw(st.booleans()):
            members.reverse()
        out.append(f"{start}{draw(_WS)}{{{draw(_WS)}{', '.join(members)}}}{draw(_WS)}")
        out.append(end if draw(st.integers(0, 4)) else "")
        out.append(draw(st.sampled_from(["", "\n", " between "])))
    return "".join(out)


def _well_formed(text: str, start="<tool_call>") -> bool:
    """Every call body is one JSON object (the one-shot answer has calls)."""
    return bool(whole("hermes", text).calls)


@settings(max_examples=300, deadline=None)
@given(hermes_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_hermes_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("hermes", text)
    got = incremental("hermes", split(text, cuts))
    if want.calls:
        assert got.named_calls() == want.named_calls()
        assert got.content == want.content
    else:  # the one-shot answer found the output malformed; any split gives the same answer
        assert got == incremental("hermes", [text])
    assert incremental("hermes", list(text), restore=False) == incremental("hermes", [text])


def test_name_first_then_arguments_as_written():
    p = registry.get_tool_parser("hermes").incremental(CTX)
    steps = ['<tool_call>\n{"name": "write_file", "argu', 'ments": {"path": "a.py", "content": "x', "=1\\n",
             'y"}}\n</tool_call>']
    deltas = [p.feed(s, []) for s in steps] + [p.finish()]
    sent = [[(tc.name, tc.arguments) for tc in d.tool_calls] for d in deltas]
    assert sent == [[("write_file", "")], [(None, '{"path": "a.py", "content": "x')], [(None, "=1\\n")],
                    [(None, 'y"}')], []]


@pytest.mark.parametrize("text, content, calls", [
    # invalid JSON after the name: the call stands, the text from the breaking byte is content
    ('<tool_call>{"name": "f", "arguments": {"a": tru}}</tool_call>', 'tru}}</tool_call>', [("f", '{"a": ')]),
    # truncated: the call stands with what was sent; held bytes are dropped
    ('Hi <tool_call>{"name": "f", "arguments": {"a": 12', "Hi ", [("f", '{"a": ')]),
    # a name that is not a string: nothing was opened, the call's text is content
    ('<tool_call>{"name": 3, "arguments": {}}</tool_call> x', '<tool_call>{"name": 3, "arguments": {}}</tool_call> x', []),
    # no arguments: the call stands (name sent), the closing brace on is content
    ('<tool_call>{"name": "f"}</tool_call>', "}</tool_call>", [("f", "")]),
    # text after the object inside the call; later calls are content too
    ('<tool_call>{"name": "f", "arguments": {}} x</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>',
     'x</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>', [("f", "{}")]),
    # an end marker inside the JSON
    ('<tool_call>{"name": "f", "arguments": {"a": "</tool_call>"}}', '</tool_call>"}}', [("f", '{"a": "')]),
])
def test_malformed_output_gets_the_documented_answer_for_every_split(text, content, calls):
    for pieces in ([text], list(text), split(text, [5, 17, 30])):
        got = incremental("hermes", pieces)
        assert (got.content, got.named_calls()) == (content, calls)


def test_a_long_call_keeps_a_small_state():
    p = registry.get_tool_parser("hermes").incremental(CTX)
    body = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.py", "content": "' + "print(1)\\n" * 3000
    sizes = []
    for k in range(0, len(body), 5):
        p.feed(body[k : k + 5], [])
        sizes.append(len(msgspec.msgpack.encode(p.snapshot())))
    assert max(sizes) < 100


def test_whole_mode_is_unchanged_by_the_flag():
    text = '<tool_call>{"name": "f", "arguments": {"a": 1.50}}</tool_call>'
    assert whole("hermes", text).named_calls() == [("f", canonical('{"a": 1.50}'))]
    assert json.loads(incremental("hermes", list(text)).calls[0][2]) == {"a": 1.5}


@st.composite
def llama_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure: ", "<|python_tag|>"]))]
    for k in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(["arguments", "parameters"]))
        members = [f'"name"{draw(_WS)}:{draw(_WS)}{draw(json_string())}', f'"{key}"{draw(_WS)}:{draw(_WS)}{draw(JSON_TEXT)}']
        if draw(st.booleans()):
            members.reverse()
        out.append(("; " if k else "") + f"{{{draw(_WS)}{', '.join(members)}}}")
    out.append(draw(st.sampled_from(["", " done", "{", "{}"])))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(llama_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_llama_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("llama3_json", text)
    got = incremental("llama3_json", split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == incremental("llama3_json", [text])
    assert incremental("llama3_json", list(text), restore=False) == incremental("llama3_json", [text])


@pytest.mark.parametrize("text, content, calls", [
    ("Just prose, no call.", "Just prose, no call.", []),
    ('Here: {"a": 1} and more', 'Here: {"a": 1} and more', []),
    ('{"name": "f", "parameters": {"x": [1, 2]}}{"name": "g", "parameters": {}}', '{}}', [("f", '{"x": [1, 2]}')]),
    ('{"name": "f", "parameters": {"x": 1', "", [("f", '{"x": ')]),
])
def test_llama_documented_answers(text, content, calls):
    for pieces in ([text], list(text)):
        got = incremental("llama3_json", pieces)
        assert (got.content, got.named_calls()) == (content, calls)


XML_TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"},
    "opts": {"type": "object"}, "flag": {"type": ["boolean", "string"]}}}}}]
XML_CTX = ParseContext(tools=XML_TOOLS, tool_choice="auto")
_XML_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<>"), max_size=15),
    st.sampled_from(["\n", "\n\n", "\nx\n", "0644", "12", "true", '{"a": [1, 2]}', "a < b > c", "\n</x>\n"]),
)


def xml_whole(name, text):
    return feed(lambda: registry.get_tool_parser(name)(XML_CTX), [text])


def xml_incremental(name, pieces, restore=True):
    return feed(lambda: registry.get_tool_parser(name).incremental(XML_CTX), pieces, restore=restore)


@st.composite
def qwen_coder_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n", "  "]))]
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "other"]))
        params = "".join(
            f"<parameter={k}>{draw(_XML_VALUES)}</parameter>{draw(st.sampled_from(['', chr(10)]))}"
            for k in draw(st.lists(st.sampled_from(["path", "content", "mode", "opts", "flag", "x"]), max_size=4, unique=True))
        )
        out.append(f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>{draw(st.sampled_from(['', chr(10), ' tail']))}")
    return "".join(out)


@st.composite
def glm_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n"]))]
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "unknown_fn"]))
        args = "".join(
            f"<arg_key>{k}</arg_key>{draw(st.sampled_from(['', chr(10)]))}<arg_value>{draw(_XML_VALUES)}</arg_value>"
            for k in draw(st.lists(st.sampled_from(["path", "content", "mode", "opts", "flag", "x"]), max_size=4, unique=True))
        )
        out.append(f"<tool_call>{name}\n{args}</tool_call>{draw(st.sampled_from(['', chr(10)]))}")
    return "".join(out)


@st.composite
def minimax_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n"])), "<minimax:tool_call>"]
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "unknown_fn"]))
        quote = draw(st.sampled_from(['"', "'", ""]))
        params = "".join(
            f"<parameter name={quote}{k}{quote}>{draw(_XML_VALUES)}</parameter>{draw(st.sampled_from(['', chr(10)]))}"
            for k in draw(st.lists(st.sampled_from(["path", "content", "mode", "opts", "flag", "x"]), max_size=4, unique=True))
        )
        out.append(f'\n<invoke name="{name}">\n{params}</invoke>')
    out.append(draw(st.sampled_from(["\n</minimax:tool_call>", "\n</minimax:tool_call> tail", ""])))
    return "".join(out)


@pytest.mark.parametrize("family, outputs", [("qwen3_coder", qwen_coder_output()), ("glm45", glm_output()),
                                             ("minimax_m2", minimax_output())])
def test_tag_family_streams_add_up_to_the_one_shot_answer(family, outputs):
    @settings(max_examples=250, deadline=None)
    @given(outputs, st.lists(st.integers(0, 10_000), max_size=10))
    def check(text, cuts):
        want = xml_whole(family, text)
        got = xml_incremental(family, split(text, cuts))
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
        assert xml_incremental(family, list(text), restore=False) == got

    check()


def test_minimax_sends_a_parameter_once_its_name_closes():
    p = registry.get_tool_parser("minimax_m2").incremental(XML_CTX)
    steps = ['<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="content">li', "ne 1\n",
             '</parameter>\n<parameter name=\'mode\'>7</parameter>', "\n</invoke>\n</minimax:tool_call>"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{"), (None, '"content": "'), (None, "li")], [(None, "ne 1\\n")],
                    [(None, '"'), (None, ', "mode": 7')], [(None, "}")]]


def test_tag_family_sends_string_values_as_they_arrive():
    p = registry.get_tool_parser("qwen3_coder").incremental(XML_CTX)
    steps = ["<tool_call>\n<function=write_file>\n<parameter=mode>\n06", "44\n</parameter>\n<parameter=content>\nli",
             "ne 1\n", "line 2\n</parameter>\n</function>\n</tool_call>"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("write_file", "{")], [(None, '"mode": 644'), (None, ', "content": "'), (None, "li")],
                    [(None, "ne 1")], [(None, "\\nline 2"), (None, '"'), (None, "}")]]


DS = {"begin": "<｜tool▁calls▁begin｜>", "end": "<｜tool▁calls▁end｜>", "call": "<｜tool▁call▁begin｜>",
      "call_end": "<｜tool▁call▁end｜>", "sep": "<｜tool▁sep｜>"}


@st.composite
def deepseek_output(draw, v3: bool) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n", " "])), DS["begin"]]
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["get_weather", "f"]))
        args = draw(st.one_of(JSON_TEXT, st.sampled_from(["{}", "not json", "a\n``b", "```", "\n"])))
        if v3:
            out.append(f"{DS['call']}function{DS['sep']}{name}\n```json\n{args}\n```{DS['call_end']}")
        else:
            out.append(f"{DS['call']}{name}{DS['sep']}{args}{DS['call_end']}")
        out.append(draw(st.sampled_from(["", "\n"])))
    out.append(DS["end"] if draw(st.integers(0, 3)) else "")
    out.append(draw(st.sampled_from(["", " tail", "\n"])))
    return "".join(out)


@pytest.mark.parametrize("family", ["deepseek_v3", "deepseek_v31"])
def test_deepseek_streams_add_up_to_the_one_shot_answer(family):
    @settings(max_examples=250, deadline=None)
    @given(deepseek_output(family == "deepseek_v3"), st.lists(st.integers(0, 10_000), max_size=10))
    def check(text, cuts):
        want = whole(family, text)
        got = incremental(family, split(text, cuts))
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
        assert incremental(family, list(text), restore=False) == got

    check()


@st.composite
def required_output(draw) -> str:
    items = []
    for _ in range(draw(st.integers(0, 3))):
        members = [f'"name": {draw(json_string())}']
        if draw(st.integers(0, 4)):
            members.append(f'"parameters"{draw(_WS)}:{draw(_WS)}{draw(st.one_of(JSON_TEXT, st.just("null")))}')
        if draw(st.booleans()):
            members.reverse()
        items.append("{" + ", ".join(members) + "}")
    return draw(_WS) + "[" + ("," + draw(_WS)).join(items) + "]" + draw(_WS)


@settings(max_examples=300, deadline=None)
@given(required_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_required_streams_add_up_to_the_one_shot_answer(text, cuts):
    from tokenbridge.parsers.choice import RequiredToolChoice, StreamedRequiredToolChoice

    want = feed(lambda: RequiredToolChoice(CTX), [text])
    got = feed(lambda: StreamedRequiredToolChoice(CTX), split(text, cuts), restore=True)
    if want.calls or text.strip() == "[]":
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert feed(lambda: StreamedRequiredToolChoice(CTX), list(text)) == feed(lambda: StreamedRequiredToolChoice(CTX), [text])


_OBJECTS = JSON_TEXT.filter(lambda t: t.startswith("{"))


@st.composite
def granite_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.", "Let me look. ", " \n", "日本 😀"]))]
    for _ in range(draw(st.integers(1, 2))):
        elements = []
        for _ in range(draw(st.integers(1, 3))):
            members = [f'"name":{draw(_WS)}"{draw(st.sampled_from(["f", "get_weather", "日本"]))}"',
                       f'"arguments"{draw(_WS)}:{draw(_WS)}{draw(_OBJECTS)}']
            if draw(st.booleans()):
                members.append(f'"id": {draw(JSON_TEXT)}')
            elements.append("{" + draw(_WS) + ("," + draw(_WS)).join(members) + draw(_WS) + "}")
        sep = draw(st.sampled_from([",", ", ", ",\n"]))
        marker = draw(st.sampled_from(["<|tool_call|>", "<tool_call>"]))
        out.append(f"{marker}{draw(_WS)}[{draw(_WS)}{sep.join(elements)}{draw(_WS)}]")
        out.append(draw(st.sampled_from(["", " after", "\n"])))
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(granite_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_granite_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("granite", text)
    got = incremental("granite", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("granite", list(text), restore=False) == got


def test_granite_sends_arguments_as_written():
    p = registry.get_tool_parser("granite").incremental(CTX)
    steps = ['Hi <|tool_call|>[{"name": "f",', ' "arguments": {"a":  1', '.50, "b": "x', 'y"}}, {"name": "g"}]']
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps] + [p.finish().tool_calls]
    assert sent == [[("f", "")], [(None, '{"a":  ')], [(None, '1.50, "b": "x')], [(None, 'y"}'), ("g", "{}")], []]


@pytest.mark.parametrize("text, content, calls", [
    # a truncated element stands once named; the held text is dropped
    ('<|tool_call|>[{"name": "f", "arguments": {"a": 1}', "", [("f", '{"a": 1}')]),
    # invalid JSON after the name: the call stands, the rest is content
    ('<|tool_call|>[{"name": "f", "arguments": {"a": tru}}]', "tru}}]", [("f", '{"a": ')]),
    # not an array after the marker: the marker goes, the rest is content
    ("Hi <|tool_call|> no call", "Hi no call", []),
    # an element with no name: content from its start
    ('<|tool_call|>[{"arguments": {}}]', '{"arguments": {}}]', []),
])
def test_granite_documented_answers(text, content, calls):
    for pieces in ([text], list(text)):
        got = incremental("granite", pieces)
        assert (got.content, got.named_calls()) == (content, calls)


@settings(max_examples=150, deadline=None)
@given(hermes_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_granite4_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("granite4", text)
    got = incremental("granite4", split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == incremental("granite4", [text])
    assert incremental("granite4", list(text), restore=False) == incremental("granite4", [text])


@settings(max_examples=150, deadline=None)
@given(hermes_output("<function_call>", ""), st.lists(st.integers(0, 10_000), max_size=10))
def test_granite_20b_fc_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("granite-20b-fc", text)
    got = incremental("granite-20b-fc", split(text, cuts))
    if want.calls:
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    else:
        assert got == incremental("granite-20b-fc", [text])
    assert incremental("granite-20b-fc", list(text), restore=False) == incremental("granite-20b-fc", [text])


_PLAMO_ARGS = "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"


@st.composite
def plamo_output(draw) -> str:
    reqs = "".join(
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>"
        + draw(st.sampled_from(["f", "get_weather"])) + "<|plamo:end_tool_name:plamo|>" + _PLAMO_ARGS
        + draw(_WS) + draw(st.one_of(_OBJECTS, st.just(""))) + draw(_WS)
        + "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
        for _ in range(draw(st.integers(1, 3))))
    head = draw(st.sampled_from(["", "Checking. ", "\n"]))
    tail = draw(st.sampled_from(["", " done", "<|plamo:tag|>"]))
    return f"{head}<|plamo:begin_tool_requests:plamo|>{reqs}<|plamo:end_tool_requests:plamo|>{tail}"


@settings(max_examples=150, deadline=None)
@given(plamo_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_plamo_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("plamo3", text)
    got = incremental("plamo3", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("plamo3", list(text), restore=False) == got


@st.composite
def inkling_output(draw) -> str:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            out.append("<|message_model|><|content_text|>" + draw(st.sampled_from(["Hi.", " ", "日本"])) + "<|end_message|>")
        members = [f'"name":{draw(_WS)}"{draw(st.sampled_from(["f", "get_weather"]))}"']
        if draw(st.integers(0, 3)):
            members.append(f'"args"{draw(_WS)}:{draw(_WS)}{draw(_OBJECTS)}')
        if draw(st.booleans()):
            members.append(f'"id": {draw(JSON_TEXT)}')
        body = "{" + draw(_WS) + ("," + draw(_WS)).join(members) + draw(_WS) + "}"
        out.append(f"<|message_model|><|content_invoke_tool_json|>{draw(_WS)}{body}{draw(_WS)}<|end_message|>")
    return "".join(out) + draw(st.sampled_from(["", "tail"]))


@settings(max_examples=150, deadline=None)
@given(inkling_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_inkling_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("inkling", text)
    got = incremental("inkling", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("inkling", list(text), restore=False) == got


def test_inkling_sends_the_name_then_the_arguments_as_written():
    p = registry.get_tool_parser("inkling").incremental(CTX)
    steps = ['<|message_model|><|content_invoke_tool_json|>{"name": "f", "ar', 'gs": {"a":', ' "x"}}', "<|end_message|>"]
    sent = [[(tc.name, tc.arguments) for tc in p.feed(s, []).tool_calls] for s in steps]
    assert sent == [[("f", "")], [(None, '{"a":')], [(None, ' "x"}')], []]


@st.composite
def mistral_output(draw) -> str:
    entries = []
    for _ in range(draw(st.integers(1, 3))):
        members = [f'"name":{draw(_WS)}{draw(json_string())}']
        if draw(st.integers(0, 4)):
            members.append(f'"arguments"{draw(_WS)}:{draw(_WS)}{draw(st.one_of(_OBJECTS, json_string()))}')
        if draw(st.booleans()):
            members.reverse()
        entries.append("{" + draw(_WS) + ("," + draw(_WS)).join(members) + draw(_WS) + "}")
    calls = entries[0] if len(entries) == 1 and draw(st.booleans()) else "[" + ("," + draw(_WS)).join(entries) + "]"
    head = draw(st.sampled_from(["", "Voilà: ", "日本 😀"]))
    return f"{head}[TOOL_CALLS]{draw(_WS)}{calls}{draw(st.sampled_from(['', ' trailing', '</s>']))}"


@settings(max_examples=200, deadline=None)
@given(mistral_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_mistral_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("mistral", text)
    got = incremental("mistral", split(text, cuts))
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    one_by_one = incremental("mistral", list(text), restore=False)
    assert (one_by_one.content, one_by_one.named_calls()) == (got.content, got.named_calls())
    assert all(call_id and len(call_id) == 9 for call_id, _, _ in got.calls)


@pytest.mark.parametrize("text, content, calls", [
    # a forced choice: the text may be the calls, or content up to the marker
    ('[{"name": "f", "arguments": {"a": 1}}]', "", [("f", '{"a": 1}')]),
    (' Sure. [TOOL_CALLS][{"name": "f", "arguments": {}}]', " Sure. ", [("f", "{}")]),
])
def test_mistral_forced_choice(text, content, calls):
    ctx = ParseContext(tools=CTX.tools, tool_choice="required")
    for pieces in ([text], list(text)):
        got = feed(lambda: registry.get_tool_parser("mistral").incremental(ctx), pieces, restore=True)
        assert (got.content, got.named_calls()) == (content, calls)


@st.composite
def phi4_output(draw) -> str:
    entries = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(["arguments", "parameters"]))
        # vLLM's call text ends at the first "]", so none is written inside a call
        members = [f'"name":{draw(_WS)}{draw(json_string().filter(lambda t: "]" not in t))}',
                   f'"{key}"{draw(_WS)}:{draw(_WS)}{draw(_OBJECTS.filter(lambda t: "]" not in t))}']
        if draw(st.booleans()):
            members.reverse()
        entries.append("{" + draw(_WS) + ("," + draw(_WS)).join(members) + draw(_WS) + "}")
    head = draw(st.sampled_from(["", "Here you go:", "日本 😀 "]))
    tail = draw(st.sampled_from(["", " The answer is 4.", "<|im_end|>"]))
    return f"{head}functools[{draw(_WS)}{(',' + draw(_WS)).join(entries)}{draw(_WS)}]{tail}"


@settings(max_examples=200, deadline=None)
@given(phi4_output(), st.lists(st.integers(0, 10_000), max_size=10))
def test_phi4_streams_add_up_to_the_one_shot_answer(text, cuts):
    want = whole("phi4_mini_json", text)
    got = incremental("phi4_mini_json", split(text, cuts))
    assert want.calls
    assert (got.content, got.named_calls()) == (want.content, want.named_calls())
    assert incremental("phi4_mini_json", list(text), restore=False) == got


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
