"""Tag-style tool-call families (qwen3_coder, glm45 and their kin) against vLLM 0.33 behaviour."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import feed
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext, ToolParser
from conftest import MODELS

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"},
            "metric": {"type": "boolean"}, "ratio": {"type": ["number", "null"]},
            "opts": {"type": "object"}, "ids": {"type": "array", "items": {"type": "integer"}},
        }}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}},
]


def _tok(folder: str) -> HFTokenizer:
    path = MODELS / folder
    return HFTokenizer(path, json.loads((path / "tokenizer_config.json").read_text()))


VOCABS = {"qwen3": _tok("qwen3"), "synthetic-families": _tok("synthetic-families")}
MODEL_OF = {"qwen3_coder": "qwen3", "step5": "qwen3", "glm45": "synthetic-families"}


def _ctx(name: str, **kw) -> ParseContext:
    return ParseContext(tools=TOOLS, tool_choice="auto", vocab=VOCABS[MODEL_OF[name]], **kw)


def run(name: str, pieces: list[str], restore: bool = False, **kw) -> tuple[str | None, list]:
    """Feed ``pieces`` (optionally through snapshot/restore between chunks) and accumulate."""
    ctx = _ctx(name, **kw)
    fed = feed(lambda: registry.get_tool_parser(name)(ctx), pieces, restore)
    return fed.content or None, fed.named_calls()


def one(name: str, text: str, **kw):
    return run(name, [text], **kw)


def qcall(fn: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={fn}>\n{body}</function>\n</tool_call>"


def gcall(fn: str, **params: str) -> str:
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in params.items())
    return f"<tool_call>{fn}\n{body}</tool_call>"


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
    # step5 keeps content whitespace
    ("step5", "  Sure! " + qcall("search", q="a"), "  Sure! ", [("search", '{"q": "a"}')]),
    ("glm45", gcall("get_weather", city="Paris", days="3"), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("glm45", "Done." + gcall("search", q="日本") + " later", "Done.", [("search", '{"q": "日本"}')]),
    ("glm45", gcall("get_weather", city="A") + gcall("search", q="B"), None,
     [("get_weather", '{"city": "A"}'), ("search", '{"q": "B"}')]),
    # unknown names are rejected by glm45; the markup goes, later text stays
    ("glm45", gcall("unknown_fn", a="1") + "<|user|>", "<|user|>", []),
    ("glm45", "<tool_call>search\n<arg_key>q</arg_key>\n<arg_value>x</arg_value>\n", None,
     [("search", '{"q": "x"}')]),
    ("glm45", "<tool_call>get_weather", None, [("get_weather", "{}")]),
    ("glm45", "<tool_call>search\n<arg_key>q</arg_key><arg_value>cut", None, [("search", "{}")]),
    ("glm45", "<tool_call>search<arg_key>q</arg_key><arg_value>{not json</arg_value></tool_call>",
     None, [("search", '{"q": "{not json"}')]),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert one(name, text) == (content, calls)


def test_glm_reasoning_markup_depends_on_reasoning_parser():
    text = "<think>x</think>A" + gcall("search", q="z")
    assert one("glm45", text) == ("<think>x</think>A", [("search", '{"q": "z"}')])
    assert one("glm45", text, reasoning_parser="glm45") == ("A", [("search", '{"q": "z"}')])
    # with thinking off the markers are plain text even then
    off = one("glm45", text, reasoning_parser="glm45", chat_template_kwargs={"enable_thinking": False})
    assert off == ("<think>x</think>A", [("search", '{"q": "z"}')])


def test_qwen_think_end_in_content_dropped_with_reasoning_parser():
    assert one("qwen3_coder", "a</think>b", reasoning_parser="qwen3") == ("ab", [])


def test_special_tokens_vanish():
    assert one("qwen3_coder", "a<|im_start|>b") == ("ab", [])


def test_names_registered_once():
    rows = registry.describe()["tool"]
    listed = [n for e in rows for n in (e["name"], *e["aliases"])]
    for name in ("qwen3_coder", "qwen3_xml", "step5", "step3p5", "seed_oss", "mimo", "glm45",
                 "glm47", "ling3"):
        assert listed.count(name) == 1, name
        assert issubclass(registry.get_tool_parser(name), ToolParser)


def test_snapshot_is_small_and_restorable():
    text = "Hello " + qcall("search", q="a" * 50) + "x"
    assert run("qwen3_coder", list(text), restore=True) == one("qwen3_coder", text)
    parser = registry.get_tool_parser("qwen3_coder")(_ctx("qwen3_coder"))
    parser.feed("Hello there, this is a long answer. " * 20, [])
    assert len(msgspec.msgpack.encode(parser.snapshot())) < 100


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_chunkings_accumulate_to_one_shot(data):
    name, text, _, _ = data.draw(st.sampled_from(CASES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    restore = data.draw(st.booleans())
    assert run(name, pieces, restore=restore) == one(name, text)
