"""Reasoning across the registry: every parser is chunking invariant, and the parity corpus's
reasoning split and ``reasoning_ended``. Each family's own cases are in its ``test_<family>.py``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED
from feeding import ctx, parse, parser_cls, vocab
from test_qwen import QWEN3_CASES
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

MODELS = SHARED / "models"
CASES = SHARED / "parity" / "cases"

registry.load_all()


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
