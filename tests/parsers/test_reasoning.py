"""Reasoning parsers: vLLM 0.33's one-shot split, chunking invariance, and the parity corpus."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED
from feeding import ctx, parse, parser_cls, vocab
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

MODELS = SHARED / "models"
CASES = SHARED / "parity" / "cases"

registry.load_all()


# -- one-shot behaviour per family ----------------------------------------------------------

QWEN3_CASES = [
    ("<think>hm</think>\n\nHi", ("hm", "\n\nHi")),
    ("Hello there!", ("Hello there!", None)),  # starts inside reasoning
    ("Let me check.\n</think>\n\nok", ("Let me check.\n", "\n\nok")),  # trailing ws kept
    ("", (None, None)),
    ("<think>cut by length", ("cut by length", None)),  # missing end marker
    ("a<tool_call>\n{}\n</tool_call>", ("a", "<tool_call>\n{}\n</tool_call>")),  # implicit end
    ("a</think>b</think>c", ("a", "bc")),  # stray end marker in content is dropped
    ("a</think>b<think>c", ("a", "b<think>c")),  # start marker in content is text
    ("x<|im_start|>y</think><|endoftext|>z", ("xy", "z")),  # special tokens vanish
    ("日本</think>é😀", ("日本", "é😀")),
]


@pytest.mark.parametrize("text,expected", QWEN3_CASES)
def test_qwen3(text, expected):
    assert parse("qwen3", text, ctx()) == expected


def test_qwen3_thinking_off_is_all_content():
    c = ctx(kwargs={"enable_thinking": False})
    assert parse("qwen3", "<think>a</think>b", c) == (None, "<think>a</think>b")


def test_qwen3_prompt_closes_reasoning():
    v = vocab("qwen3")
    closed = v.encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    c = ctx(prompt=closed)
    assert parser_cls("qwen3").reasoning_ended_in_prompt(closed, c) is True
    assert parse("qwen3", "Hello there!", c) == (None, "Hello there!")
    # A closed block in an earlier turn does not count.
    earlier = v.encode("<|im_start|>assistant\n<think>x</think>y<|im_end|>\n<|im_start|>assistant\n")
    assert parser_cls("qwen3").reasoning_ended_in_prompt(earlier, ctx(prompt=earlier)) is False
    opened = v.encode("<|im_start|>assistant\n<think>\n")
    assert parser_cls("qwen3").reasoning_ended_in_prompt(opened, ctx(prompt=opened)) is False


def test_deepseek_r1():
    c = ctx("deepseek-v3")
    assert parse("deepseek_r1", "", c) == ("", None)  # reasoning present even when empty
    assert parse("deepseek_r1", "a</think>", c) == ("a", None)
    assert parse("deepseek_r1", "a</think>\n\nb</think>", c) == ("a", "\n\nb</think>")
    assert parse("deepseek_r1", "x<think>a</think>b", c) == ("a", "b")  # text before start dropped
    assert parse("deepseek_r1", "no end marker", c) == ("no end marker", None)
    # A tool call inside reasoning does not end it (R1 has no implicit end).
    tc = "a<｜tool▁calls▁begin｜>b"
    assert parse("deepseek_r1", tc, c) == (tc, None)
    assert parse("step5", "a</think>b", c) == ("a", "b")


def test_deepseek_r1_start_window():
    """A start marker past the window is text: the one bounded deviation from vLLM."""
    c = ctx("deepseek-v3")
    late = "x" * 100 + "<think>a</think>b"
    assert parse("deepseek_r1", late, c) == ("x" * 100 + "<think>a", "b")


def test_deepseek_v3_switch():
    c = ctx("deepseek-v3")
    assert parse("deepseek_v3", "<think>a</think>b", c) == (None, "<think>a</think>b")
    assert parse("deepseek_v3", "", c) == (None, "")  # identity keeps empty content
    on = ctx("deepseek-v3", {"thinking": True})
    assert parse("deepseek_v3", "a</think>b", on) == ("a", "b")
    assert parse("holo2", "a</think>b", ctx("deepseek-v3")) == ("a", "b")
    v = vocab("deepseek-v3")
    ids = v.encode("<｜Assistant｜><think>\n")
    assert parser_cls("deepseek_v3").reasoning_ended_in_prompt(ids, c) is True
    assert parser_cls("deepseek_v3").reasoning_ended_in_prompt(ids, on) is False


def test_glm45():
    c = ctx("synthetic-families")
    assert parse("glm45", "a \n</think>\n\nb", c) == ("a", "\n\nb")  # trailing ws stripped
    assert parse("glm45", "a</think>b<think>c \n</think>d", c) == ("ac", "bd")  # reopens
    assert parse("glm45", "a<tool_call>f\n</tool_call>", c) == ("a", "<tool_call>f\n</tool_call>")
    off = ctx("synthetic-families", {"enable_thinking": False})
    assert parse("glm47", "<think>a</think>b", off) == (None, "<think>a</think>b")


def test_kimi_k2():
    c = ctx("synthetic-families")
    tc = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
    assert parse("kimi_k2", "a\n" + tc, c) == ("a", tc)
    assert parse("kimi_k2", "<think>a</think>b", c) == ("a", "b")
    off = ctx("synthetic-families", {"thinking": False})
    assert parse("kimi_k2", "a</think>b", off) == (None, "a</think>b")


def test_other_marker_families():
    c = ctx("qwen3")
    assert parse("step3", "<think>a</think>b", c) == ("<think>a", "b")
    assert parse("step3", "", c) == ("", None)
    assert parse("step3p5", "a \n</think>\nb", c) == ("a", "\nb")
    assert parse("mimo", "a</think>b", c) == ("a", "b")
    assert parse("seed_oss", "a</seed:think>b", c) == ("a", "b")
    assert parse("seed_oss", "a<seed:tool_call>x", c) == ("a", "<seed:tool_call>x")
    assert parse("minimax_m2_append_think", "a</think>b", c) == (None, "<think>a</think>b")
    assert parse("minimax_m2_append_think", "", c) == (None, "<think>")
    assert parse("hy_v3", "a</think>b", c) == (None, "a</think>b")
    assert parse("hy_v3", "a</think>b", ctx(kwargs={"reasoning_effort": "high"})) == ("a", "b")


def test_deepseek_v4():
    c = ctx("deepseek-v3")
    assert parse("deepseek_v4", "a \n</think>b", c) == ("a", "b")
    assert parse("deepseek_v4", "a<｜DSML｜tool_calls>x", c) == ("a", "<｜DSML｜tool_calls>x")
    off = ctx("deepseek-v3", {"thinking": False})
    assert parse("deepseek_v4", "x<think>a</think>b", off) == ("a", "xb")  # content reopens
    assert parse("deepseek_v41", "a<｜DSML｜ calls>x", c) == ("a", "<｜DSML｜ calls>x")


def test_nemotron_force_content():
    c = ctx(kwargs={"force_nonempty_content": True})
    assert parse("nemotron_v3", "only thoughts", c) == (None, "only thoughts")
    assert parse("nemotron_v3", "t</think>answer", c) == ("t", "answer")
    off = ctx(kwargs={"enable_thinking": False})
    assert parse("nemotron_v3", "", off) == ("", None)
    assert parse("nemotron_v3", "t</think>a", ctx()) == ("t", "a")


def test_whole_text_families():
    c = ctx()
    g = "Here is my thought process: hm Here's my response: ok"
    assert parse("granite", g, c) == (" hm ", " ok")
    assert parse("granite", "plain", c) == (None, "plain")
    assert parse("k2_horizon", "<ifm|think>a</ifm|think>b", c) == ("a", "b")
    assert parse("k2_horizon", "a<ifm|tool_calls>x", c) == ("a", "<ifm|tool_calls>x")
    assert parse("k2_horizon", "plain", c) == ("", "plain")
    e = "a\n</think>\n\n<response>\ndef\n</response>\n"
    assert parse("ernie45", e, c) == ("a\n", "\ndef\n")


# -- chunking invariance ----------------------------------------------------------------------

SAMPLES = [t for t, _ in QWEN3_CASES] + [
    "x<think>a</think>b</think>c",
    "a \n\n</think>\n\nb<think> c</think>d",
    "<|tool_calls_section_begin|>a</think>b",
    "Here's my thought process: a Here is my response: b",
    "<seed:think>s</seed:think>t<seed:tool_call>u",
    "<ifm|think_fast>a</ifm|think_fast>b",
    "  </think>  ",
    "y" * 80 + "<think>z</think>w",
]
NAMES = sorted(registry.REASONING)
KWARGS = [{}, {"enable_thinking": False}, {"thinking": True}, {"force_nonempty_content": True}]


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    text=st.sampled_from(SAMPLES),
    kw=st.sampled_from(KWARGS),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_any_chunking_accumulates_to_one_shot(name, text, kw, cuts):
    c = ctx(kwargs=kw)
    pts = sorted({min(x, len(text)) for x in cuts})
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    assert parse(name, text, c, chunks) == parse(name, text, c)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet="<>/thinkw \n日é", max_size=40), data=st.data())
def test_random_text_chunking(text, data):
    name = data.draw(st.sampled_from(["qwen3", "glm45", "deepseek_r1", "step3", "kimi_k2"]))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=5))
    pts = sorted(set(cuts))
    chunks = [text[a:b] for a, b in zip([0, *pts], [*pts, len(text)])]
    c = ctx()
    assert parse(name, text, c, chunks) == parse(name, text, c)


# -- the parity corpus ------------------------------------------------------------------------

PROFILES = {
    "qwen3": ("qwen3", "qwen3"),
    "deepseek-r1": ("deepseek-v3", "deepseek_r1"),
    "deepseek-v31": ("deepseek-v3", "deepseek_v3"),
    "glm45": ("synthetic-families", "glm45"),
    "kimi-k2": ("synthetic-families", "kimi_k2"),
}


def _eos_ids(folder: str) -> set[int]:
    path = MODELS / folder
    gc = json.loads((path / "generation_config.json").read_text())
    eos = gc.get("eos_token_id")
    ids = set(eos if isinstance(eos, list) else [eos])
    v = vocab(folder)
    if v.eos_token_id is not None:
        ids.add(v.eos_token_id)
    return ids


def _corpus(profile: str):
    folder, _ = PROFILES[profile]
    eos = _eos_ids(folder)
    for line in (CASES / f"{profile}.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["kind"] == "chat_derender":
            body, resp = d["request"]["body"], d["response"]["body"]
            choices = body["generate_response"]["choices"]
        elif d["kind"] == "chat_derender_stream":
            body, resp = d["request_base"], d["nonstream"]
            ids, fr, sr = [], None, None
            for step in d["steps"]:
                for ch in step["generate_chunk"].get("choices", []):
                    ids += ch.get("token_ids") or []
                    fr = ch.get("finish_reason") or fr
                    sr = ch.get("stop_reason", sr)
            choices = [{"token_ids": ids, "finish_reason": fr or "stop", "stop_reason": sr}]
        else:
            continue
        if not resp or "choices" not in resp:
            continue
        req = body["chat_request"]
        if req.get("stop"):
            continue  # stop strings cut the text before parsing: derender's job
        prompt = body.get("prompt_token_ids") or body.get("generate_response", {}).get(
            "prompt_token_ids"
        )
        for ch, rc in zip(choices, resp["choices"]):
            ids = list(ch["token_ids"])
            if ch.get("finish_reason", "stop") == "stop" and ids and (
                ids[-1] in eos or ids[-1] == ch.get("stop_reason")
            ):
                ids = ids[:-1]
            yield d["id"], req, prompt or [], vocab(folder).decode(ids), rc["message"]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_corpus_reasoning(profile):
    folder, name = PROFILES[profile]
    n = 0
    for case_id, req, prompt, text, msg in _corpus(profile):
        c = ParseContext(
            tools=req.get("tools"),
            chat_template_kwargs=req.get("chat_template_kwargs") or {},
            prompt_token_ids=prompt,
            vocab=vocab(folder),
        )
        reasoning, content = parse(name, text, c)
        if req.get("include_reasoning") is False:
            reasoning = None
        assert reasoning == msg.get("reasoning"), case_id
        if not req.get("tools"):
            assert content == msg.get("content"), case_id
        n += 1
    assert n > 50


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_corpus_reasoning_ended(profile):
    folder, name = PROFILES[profile]
    cls = parser_cls(name)
    n = 0
    for line in (CASES / f"{profile}.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["kind"] != "chat_render" or d["response"]["status"] != 200:
            continue
        req, resp = d["request"]["body"], d["response"]["body"]
        kw = (resp.get("reasoning_parser_kwargs") or {}).get("chat_template_kwargs") or {}
        c = ParseContext(chat_template_kwargs=kw, vocab=vocab(folder))
        got = cls.reasoning_ended_in_prompt(resp["token_ids"], c)
        if req.get("include_reasoning") is False:
            got = True
        assert got == resp["reasoning_ended"], d["id"]
        n += 1
    assert n > 10


def test_registry_names_unique_and_cover_vllm():
    names = json.loads((SHARED / "docs" / "parser-names.json").read_text())["reasoning"]
    listed = registry.reasoning_names()
    assert len(listed) == len(set(listed))
    assert set(names) <= set(listed), sorted(set(names) - set(listed))
