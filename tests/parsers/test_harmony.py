"""gpt-oss Harmony parsers (`openai` tool, `openai_gptoss` reasoning) against vLLM 0.33.

`data/harmony_vllm_cases.jsonl` holds outputs answered by vLLM 0.33's own HarmonyParser
(non-streaming `parse`, with oss-harmony 0.0.11), for the three parser configurations.

Known gaps: none known (incremental streams open a call at its message header).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import SHARED

MODEL = SHARED / "models" / "gpt-oss"
CORPUS = SHARED / "parity" / "cases" / "gpt-oss.jsonl"
CASES = Path(__file__).parent / "data" / "harmony_vllm_cases.jsonl"

if not (MODEL / "tokenizer.json").is_file():
    pytest.skip("gpt-oss model folder not available", allow_module_level=True)
os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(MODEL))

from tokenizers import Tokenizer  # noqa: E402

from tokenbridge.parsers import registry  # noqa: E402
from tokenbridge.model.harmony import harmony_encoding  # noqa: E402
from tokenbridge.parsers.base import ParseContext  # noqa: E402
from tokenbridge.parsers.output import OutputParser  # noqa: E402
from tokenbridge.parsers.families.harmony import HarmonyReasoningParser
from tokenbridge.parsers.families.harmony import HarmonyToolParser

TOK = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
ENCODING = harmony_encoding()
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "search_web", "parameters": {"type": "object"}}},
]


def ids_of(text: str) -> list[int]:
    return TOK.encode(text, add_special_tokens=False).ids


def oss_harmony() -> bool:
    try:
        importlib.metadata.version("oss-harmony")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def run(ids: list[int], reasoning: bool = True, tool: bool = True, cuts=(), ctx=None, tool_cls=HarmonyToolParser) -> dict:
    """Feed ``ids`` split at ``cuts``, rebuilding both parsers from a msgpack snapshot between
    chunks; return what the deltas accumulate to."""
    ctx = ctx or ParseContext(tools=TOOLS, tool_choice="auto", harmony=ENCODING)

    def build(snap=None):
        op = OutputParser(
            ctx,
            HarmonyReasoningParser(ctx) if reasoning else None,
            tool_cls(ctx) if tool else None,
        )
        if snap is not None:
            op.restore(msgspec.msgpack.decode(msgspec.msgpack.encode(snap)))
        return op

    op = build()
    out = {"reasoning": "", "content": "", "calls": {}}
    bounds = [*sorted(cuts), len(ids)]
    prev = 0

    def add(d):
        out["reasoning"] += d.reasoning
        out["content"] += d.content
        for c in d.tool_calls:
            entry = out["calls"].setdefault(c.index, ["", ""])
            if c.name:
                assert not entry[0], "name sent twice"
                entry[0] = c.name
            entry[1] += c.arguments

    for b in bounds:
        add(op.feed(TOK.decode(ids[prev:b], skip_special_tokens=False), ids[prev:b]))
        prev = b
        op = build(op.snapshot())
    add(op.finish())
    return {
        "reasoning": out["reasoning"] or None,
        "content": out["content"] or None,
        "tool_calls": [out["calls"][i] for i in sorted(out["calls"])],
    }


CALL = '<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>'
THINK = "<|channel|>analysis<|message|>{text}<|end|><|start|>assistant"


def test_single_call():
    ids = ids_of(CALL.format(name="get_weather", args='{"city":"Paris"}'))
    assert run(ids) == {"reasoning": None, "content": None,
                        "tool_calls": [["get_weather", '{"city": "Paris"}']]}


def test_reasoning_then_several_calls_then_content():
    text = (
        THINK.format(text="Let me look.")
        + CALL.format(name="get_weather", args='{"city": "東京"}')
        + "<|start|>assistant" + CALL.format(name="search_web", args='{"q": 1}')
        + "<|start|>assistant<|channel|>final<|message|>Done.<|return|>"
    )
    assert run(ids_of(text)) == {
        "reasoning": "Let me look.",
        "content": "Done.",
        "tool_calls": [["get_weather", '{"city": "\\u6771\\u4eac"}'], ["search_web", '{"q": 1}']],
    }


def test_parts_are_joined_by_newlines():
    text = (
        THINK.format(text="a") + THINK.format(text="") + THINK.format(text="b")
        + "<|channel|>final<|message|>x<|end|><|start|>assistant"
        + "<|channel|>commentary<|message|>y<|end|>"
    )
    assert run(ids_of(text)) == {"reasoning": "a\nb", "content": "x\ny", "tool_calls": []}


def test_invalid_json_and_non_json_content_type_are_kept_raw():
    text = (
        CALL.format(name="get_weather", args='{"city": "東京"')
        + "<|start|>assistant<|channel|>commentary to=functions.search_web code<|message|>{\"a\": 1}<|call|>"
    )
    assert run(ids_of(text))["tool_calls"] == [
        ["get_weather", '{"city": "東京"'], ["search_web", '{"a": 1}'],
    ]


def test_missing_end_marker_and_length_cut_mid_call():
    no_end = ids_of('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}')
    assert run(no_end)["tool_calls"] == [["get_weather", '{"city": "Paris"}']]
    cut = ids_of(THINK.format(text="hm") + '<|channel|>commentary to=functions.search_web <|constrain|>json<|message|>{"query')
    assert run(cut) == {"reasoning": "hm", "content": None, "tool_calls": [["search_web", '{"query']]}


def test_unknown_function_is_still_a_call_and_builtins_are_not():
    text = (
        CALL.format(name="nope", args="{}")
        + "<|start|>assistant<|channel|>analysis to=python<|message|>print(1)<|call|>"
    )
    assert run(ids_of(text))["tool_calls"] == [["nope", "{}"]]


def test_header_cut_falls_back_to_raw_content():
    assert run(ids_of(THINK.format(text="r") + "<|channel|>fin")) == {
        "reasoning": "r", "content": "<|start|>assistant<|channel|>fin", "tool_calls": []}
    assert run(ids_of("no harmony here")) == {
        "reasoning": None, "content": "no harmony here", "tool_calls": []}


def test_without_tool_parser_calls_are_dropped_not_content():
    text = THINK.format(text="r") + CALL.format(name="get_weather", args="{}")
    assert run(ids_of(text), tool=False) == {"reasoning": "r", "content": None, "tool_calls": []}


def test_without_reasoning_parser_analysis_is_dropped():
    text = THINK.format(text="r") + "<|channel|>final<|message|>ok<|return|>"
    assert run(ids_of(text), reasoning=False) == {"reasoning": None, "content": "ok", "tool_calls": []}


def test_split_multibyte_characters_and_trailing_partial_utf8():
    ids = ids_of("<|channel|>final<|message|>𝔘𝔫 🧑‍🚀 ࿐")
    assert run(ids)["content"] == "𝔘𝔫 🧑‍🚀 ࿐"
    for cut in range(1, len(ids)):
        assert run(ids[:cut]) == run(ids[:cut], cuts=range(1, cut))


def test_reasoning_ended_in_prompt():
    ctx = ParseContext(harmony=ENCODING)
    assert HarmonyReasoningParser.reasoning_ended_in_prompt([1, 2], ctx) is True


def test_registered_names():
    registry.load_all()
    for name in ("openai", "gpt-oss", "harmony"):
        assert registry.get_tool_parser(name) is HarmonyToolParser
    for name in ("openai_gptoss", "gpt-oss", "gpt_oss"):
        assert registry.get_reasoning_parser(name) is HarmonyReasoningParser


def test_bad_snapshot_is_rejected():
    p = HarmonyToolParser(ParseContext(tools=TOOLS, tool_choice="auto", harmony=ENCODING))
    for bad in (None, [], [9] * 13, ["x"] * 13):
        with pytest.raises(ValueError):
            p.restore(bad)


def vllm_cases():
    rows = [json.loads(line) for line in CASES.read_text().splitlines()]
    portable = oss_harmony()
    return [r for r in rows if portable or r["portable"]]


def test_matches_vllm_harmony_parser():
    for row in vllm_cases():
        exp = row["expected"]
        got = run(row["ids"], row["reasoning_parser"], row["tool_parser"])
        assert got == exp, row["ids"]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_chunking_accumulates_to_the_one_shot_result(data):
    rows = vllm_cases()
    row = rows[data.draw(st.integers(0, len(rows) - 1))]
    ids = row["ids"]
    cuts = data.draw(st.sets(st.integers(1, max(1, len(ids) - 1)), max_size=8))
    args = (row["reasoning_parser"], row["tool_parser"])
    assert run(ids, *args, cuts=cuts) == run(ids, *args)


def corpus_cases():
    if not CORPUS.is_file():
        return []
    out = []
    for line in CORPUS.read_text().splitlines():
        d = json.loads(line)
        if d["kind"] == "chat_derender" and d["response"]["status"] == 200:
            out.append(d)
    return out


@pytest.mark.parametrize("case", corpus_cases(), ids=lambda d: d["id"])
def test_corpus_chat_derender(case):
    """What derender builds from the parsers (assembly as vLLM's message_assembly)."""
    body = case["request"]["body"]
    req = body["chat_request"]
    tool_choice = req.get("tool_choice") or ("auto" if req.get("tools") else "none")
    forced = tool_choice == "required" or isinstance(tool_choice, dict)
    ctx = ParseContext(tools=req.get("tools"), tool_choice=tool_choice, harmony=ENCODING,
                       include_reasoning=req.get("include_reasoning", True))
    use_tools = bool(req.get("tools")) and (tool_choice == "auto" or forced)
    for choice, rchoice in zip(body["generate_response"]["choices"],
                               case["response"]["body"]["choices"]):
        got = run(choice["token_ids"], tool=use_tools, ctx=ctx,
                  cuts=range(3, len(choice["token_ids"]), 3))
        if not ctx.include_reasoning:
            got["reasoning"] = None
        if req.get("parallel_tool_calls") is False:
            got["tool_calls"] = got["tool_calls"][:1]
        if forced:
            got["content"] = got["content"] or ""
        msg = rchoice["message"]
        assert got == {
            "reasoning": msg["reasoning"],
            "content": msg["content"],
            "tool_calls": [[t["function"]["name"], t["function"]["arguments"]]
                           for t in msg.get("tool_calls") or []],
        }


WELL_FORMED = [
    CALL.format(name="get_weather", args='{"city":"Paris"}'),
    THINK.format(text="Let me look.") + CALL.format(name="get_weather", args='{"city": "東京", "n": [1.50, -0, 1e2]}')
    + "<|start|>assistant" + CALL.format(name="search_web", args=' {"q": "a\\u00e9 😀"} ')
    + "<|start|>assistant<|channel|>final<|message|>Done.<|return|>",
    "<|channel|>commentary to=functions.search_web code<|message|>print(1) # not json<|call|>",
    '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}',
]


@pytest.mark.parametrize("text", WELL_FORMED)
def test_incremental_calls_add_up_to_the_one_shot_answer_for_every_cut(text):
    ids = ids_of(text)
    want = run(ids)
    for cuts in ([], list(range(1, len(ids))), list(range(3, len(ids), 3))):
        assert run(ids, cuts=cuts, tool_cls=HarmonyToolParser.incremental) == want


def test_incremental_call_opens_at_its_header_and_streams_its_arguments():
    ctx = ParseContext(tools=TOOLS, tool_choice="auto", harmony=ENCODING)
    p = HarmonyToolParser.incremental(ctx)
    ids = ids_of(CALL.format(name="get_weather", args='{"city": "Paris", "days": 3}'))
    sent = [[(c.name, c.arguments) for c in p.feed("", [t]).tool_calls] for t in ids]
    sent.append([(c.name, c.arguments) for c in p.finish().tool_calls])
    flat = [x for step in sent for x in step]
    assert flat[0] == ("get_weather", "")
    assert "".join(a for _, a in flat) == '{"city": "Paris", "days": 3}'
    assert sum(1 for step in sent if any(a for _, a in step)) > 3  # in many pieces, not whole


def test_incremental_invalid_json_keeps_the_rest_verbatim():
    ids = ids_of(CALL.format(name="get_weather", args='{"city": Paris}'))
    for cuts in ([], list(range(1, len(ids)))):
        assert run(ids, cuts=cuts, tool_cls=HarmonyToolParser.incremental)["tool_calls"] == [
            ["get_weather", '{"city": Paris}']]
