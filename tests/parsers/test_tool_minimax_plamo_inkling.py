"""MiniMax-M2/M3, PLaMo-3 and Inkling tag families against vLLM 0.33's non-streaming answers.

Expected values were produced by running vLLM's own parser classes (``extract_tool_calls``)
on the same texts. No tokenizer of these models is available, so the texts are plain text
(markers are text); PLaMo-3 also runs with the real Qwen3 tokenizer, whose ids decide its
truncated-marker cut.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import feed
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from conftest import MODELS

QWEN3 = MODELS / "qwen3"
VOCAB = HFTokenizer(QWEN3, json.loads((QWEN3 / "tokenizer_config.json").read_text()))
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}},
]


def run(name: str, pieces: list[str], restore: bool = False, vocab=None, **kw):
    """Feed ``pieces`` (optionally through snapshot/restore between chunks) and accumulate."""
    kw.setdefault("tool_choice", "auto")
    ctx = ParseContext(tools=TOOLS, vocab=vocab, **kw)
    fed = feed(lambda: registry.get_tool_parser(name)(ctx), pieces, restore)
    return fed.content or None, fed.named_calls()


def one(name: str, text: str, **kw):
    return run(name, [text], **kw)


# ── MiniMax-M2 ──────────────────────────────────────────────────────────────────────────────


def m2(*invokes: str) -> str:
    return "<minimax:tool_call>" + "\n".join(invokes) + "\n</minimax:tool_call>"


def inv(fn: str, **params: str) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params.items())
    return f'<invoke name="{fn}">\n{body}</invoke>'


# ── MiniMax-M3 ──────────────────────────────────────────────────────────────────────────────

NS = "]<]minimax[>["


def m3(*invokes: str) -> str:
    return f"{NS}<tool_call>\n" + "".join(invokes) + f"{NS}</tool_call>"


def inv3(fn: str, body: str) -> str:
    return f'{NS}<invoke name="{fn}">\n{body}{NS}</invoke>\n'


def el(tag: str, value: str) -> str:
    return f"{NS}<{tag}>{value}{NS}</{tag}>"


# ── PLaMo-3 ─────────────────────────────────────────────────────────────────────────────────

P_REQS = ("<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>")
P_ARGS = "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"


def preq(fn: str, args: str) -> str:
    return (
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>" + fn
        + "<|plamo:end_tool_name:plamo|>" + P_ARGS + args
        + "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
    )


def plamo(*reqs: str) -> str:
    return P_REQS[0] + "".join(reqs) + P_REQS[1]


# ── Inkling ─────────────────────────────────────────────────────────────────────────────────

I_MSG, I_TEXT, I_THINK, I_TOOL, I_END = (
    "<|message_model|>", "<|content_text|>", "<|content_thinking|>",
    "<|content_invoke_tool_json|>", "<|end_message|>",
)


def itool(fn: str, args: dict) -> str:
    return I_MSG + I_TOOL + json.dumps({"name": fn, "args": args}, ensure_ascii=False) + I_END


def itext(text: str) -> str:
    return I_MSG + I_TEXT + text + I_END


# (parser, output text, expected content, expected calls)
CASES = [
    # MiniMax-M2
    ("minimax_m2", "Just text.", "Just text.", []),
    ("minimax_m2", m2(inv("get_weather", city="Paris", days="3")), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("minimax_m2", "Let me check.\n" + m2(inv("search", q="a"), inv("search", q="b")) + " bye",
     "Let me check.", [("search", '{"q": "a"}'), ("search", '{"q": "b"}')]),
    ("minimax_m2", m2(inv("search", q=" 日本 ☀️\n")), None, [("search", '{"q": " 日本 ☀️\\n"}')]),
    # invalid values stay strings; unknown names are not calls (the markup is dropped)
    ("minimax_m2", m2(inv("get_weather", days="three", metric="yes")), None,
     [("get_weather", '{"days": "three", "metric": "yes"}')]),
    ("minimax_m2", "Hi " + m2(inv("nope", a="1")) + " after", "Hi  after", []),
    ("minimax_m2", "<minimax:tool_call><invoke name='search'><parameter name=q>x</parameter>",
     None, [("search", '{"q": "x"}')]),
    ("minimax_m2", 'A <minimax:tool_call><invoke name="search"><parameter name="q">Par', "A",
     [("search", "{}")]),
    ("minimax_m2", "x</think>y</minimax:tool_call>z", "x</think>yz", []),
    # MiniMax-M3
    ("minimax_m3", "No tools here.", "No tools here.", []),
    ("minimax_m3", m3(inv3("get_weather", el("city", "Paris") + el("days", "3"))), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("minimax_m3", m3(inv3("get_weather",
                           el("tags", el("item", "a") + el("item", "b")) + el("opts", el("n", "2")))),
     None, [("get_weather", '{"tags": ["a", "b"], "opts": {"n": 2}}')]),
    ("minimax_m3", "Sure. " + m3(inv3("search", el("q", "a")), inv3("search", el("q", "日本"))) + "bye",
     "Sure. ", [("search", '{"q": "a"}'), ("search", '{"q": "日本"}')]),
    ("minimax_m3", m3(inv3("nope", el("a", "1") + el("a", "2"))), None, [("nope", '{"a": ["1", "2"]}')]),
    ("minimax_m3", m3(inv3("get_weather", el("days", "x") + f"{NS}<city>Par")), None,
     [("get_weather", '{"days": "x"}')]),
    ("minimax_m3", f'{NS}<tool_call>\n{NS}<invoke name="search">\n' + el("q", "a"), None,
     [("search", '{"q": "a"}')]),
    ("minimax_m3", f'Hi {NS}<tool_call>{NS}<invoke name="sea', "Hi ", [("sea", "{}")]),
    # PLaMo-3
    ("plamo3", "Plain answer.", "Plain answer.", []),
    ("plamo3", plamo(preq("get_weather", '{"city": "Paris", "days": "3"}')), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("plamo3", "Checking. " + plamo(preq("search", '{"q": "a"}'), preq("search", '{"q": "日本"}'))
     + " done", "Checking. ", [("search", '{"q": "a"}'), ("search", '{"q": "日本"}')]),
    ("plamo3", plamo(preq("search", "{not json")), None, [("search", "{not json")]),
    ("plamo3", plamo(preq("nope", "{}")), None, [("nope", "{}")]),
    ("plamo3", P_REQS[0] + "<|plamo:begin_tool_name:plamo|>search<|plamo:end_tool_name:plamo|>"
     + P_ARGS + '{"q": "x"}<|plamo:end_tool_argu', None, [("search", '{"q": "x"}')]),
    ("plamo3", P_REQS[0] + "<|plamo:begin_tool_name:plamo|>search<|plamo:end_tool_na", None,
     [("search", "{}")]),
    ("plamo3", "Hello <|plamo:begin_tool_req", "Hello ", []),
    ("plamo3", "a<|plamo:tag|>b", "ab", []),
    # Inkling
    ("inkling", itext("Hello there."), "Hello there.", []),
    ("inkling", itool("get_weather", {"city": "Paris", "days": "3"}), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("inkling", I_MSG + I_THINK + "hmm" + I_END + itext("Checking.") + itool("search", {"q": "a"})
     + itool("search", {"q": "日本"}) + itext(" More."), "Checking. More.",
     [("search", '{"q": "a"}'), ("search", '{"q": "日本"}')]),
    ("inkling", I_MSG + I_TOOL + '{"name": "search", "args": {"q": "x"' + I_END, None,
     [("search", '{"q": "x"')]),
    ("inkling", I_MSG + I_TOOL + '{"name": "search", "args": "bad"}' + I_END, None,
     [("search", "bad")]),
    ("inkling", I_MSG + I_TOOL + '{"name": "search", "args": {"q": "cut', None,
     [("search", '{"q": "cut')]),
    ("inkling", itool("nope", {}), None, [("nope", "{}")]),
    ("inkling", I_MSG + "search" + I_END + "tail", "searchtail", []),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert one(name, text) == (content, calls)


def test_tool_choice_none_keeps_text_and_drops_calls():
    assert one("minimax_m2", "Hi " + m2(inv("search", q="a")) + " bye", tool_choice="none") == (
        "Hi  bye", [])
    assert one("minimax_m3", "Hi " + m3(inv3("search", el("q", "a"))) + "bye", tool_choice="none") == (
        "Hi ", [])
    assert one("plamo3", " a " + plamo(preq("search", "{}")) + " b", tool_choice="none") == (
        " a  b", [])
    assert one("inkling", itext(" a ") + itool("search", {}) + "b", tool_choice="none") == (
        " a b", [])


def test_reasoning_markup_with_and_without_reasoning_parser():
    text = "<think>r</think>A" + m2(inv("search", q="z"))
    assert one("minimax_m2", text) == ("<think>r</think>A", [("search", '{"q": "z"}')])
    assert one("minimax_m2", text, reasoning_parser="minimax_m2") == (
        "<think>rA", [("search", '{"q": "z"}')])
    think = "<|plamo:begin_think:plamo|>r<|plamo:end_think:plamo|>A"
    assert one("plamo3", think) == ("A", [])
    off = one("plamo3", think, chat_template_kwargs={"enable_thinking": False})
    assert off == (think, [])


def test_plamo_marker_cut_uses_token_ids():
    # with a tokenizer the cut needs the tail's ids to prefix a marker's ids (Qwen3's BPE
    # splits these differently, so nothing is cut); without one, a text prefix is enough
    text = "Hello <|plamo:begin_tool_req"
    assert one("plamo3", text, vocab=VOCAB) == (text, [])
    assert one("plamo3", "Hello <|plamo:beg", vocab=VOCAB) == ("Hello <|plamo:beg", [])
    assert one("plamo3", "Hello <|plamo:beg") == ("Hello ", [])


def test_minimax_m3_schema_of_first_identical_call():
    body = el("days", "3")
    assert one("minimax_m3", m3(inv3("get_weather", body), inv3("search", body))) == (
        None, [("get_weather", '{"days": 3}'), ("search", '{"days": 3}')])


def test_names_and_flags():
    for name in ("minimax_m2", "minimax-m2", "minimax", "minimax_m3", "minimax-m3", "plamo3",
                 "inkling"):
        cls = registry.get_tool_parser(name)
        assert cls is not None and cls.engine_based and not cls.supports_required_and_named


def test_snapshot_stays_small():
    parser = registry.get_tool_parser("inkling")(ParseContext(tools=TOOLS, tool_choice="auto"))
    parser.feed(itext("A long answer. " * 40), [])
    assert len(msgspec.msgpack.encode(parser.snapshot())) < 120


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_random_chunkings_accumulate_to_one_shot(data):
    name, text, _, _ = data.draw(st.sampled_from(CASES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    restore = data.draw(st.booleans())
    choice = data.draw(st.sampled_from(["auto", "none"]))
    vocab = VOCAB if name == "plamo3" and data.draw(st.booleans()) else None
    assert run(name, pieces, restore=restore, tool_choice=choice, vocab=vocab) == one(
        name, text, tool_choice=choice, vocab=vocab)
