"""Recorded vLLM 0.33 derender answers replayed through the pythonic, DeepSeek and Kimi parsers.

Covers the profiles llama3-pythonic, deepseek-r1, deepseek-v31 and kimi-k2: each recorded
one-shot answer (``chat_derender`` responses and the ``nonstream`` answer of
``chat_derender_stream`` cases) whose request runs the tool parser. Texts are decoded with the
profile's real tokenizer, special tokens kept, the stop token removed as derender does; the
configured reasoning parser runs first. Content is compared with "" and null taken as equal
(which one vLLM reports is the derender's concern).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import Delta, ParseContext
from tokenbridge.parsers.output import OutputParser

SHARED = Path("/work/shared")
PROFILES = ("llama3-pythonic", "deepseek-r1", "deepseek-v31", "kimi-k2")


@lru_cache(maxsize=None)
def _profile(name: str) -> dict:
    return json.loads((SHARED / "parity/profiles.json").read_text())["profiles"][name]


def _folder(name: str) -> Path:
    return (SHARED / "parity" / _profile(name)["model"]).resolve()


@lru_cache(maxsize=None)
def _tokenizer(name: str) -> HFTokenizer:
    folder = _folder(name)
    return HFTokenizer(folder, json.loads((folder / "tokenizer_config.json").read_text()))


@lru_cache(maxsize=None)
def _eos_ids(name: str) -> frozenset[int]:
    eos = json.loads((_folder(name) / "generation_config.json").read_text()).get("eos_token_id")
    ids = set(eos if isinstance(eos, list) else [eos])
    tok_eos = _tokenizer(name).eos_token_id
    return frozenset((ids | {tok_eos}) - {None})


def _runs_tool_parser(cls, req: dict) -> bool:
    if not req.get("tools"):
        return False
    choice = req.get("tool_choice") or "auto"
    if choice == "auto":
        return True
    if choice == "none":
        return cls.engine_based
    return not cls.supports_required_and_named


def _answers():
    """(profile, id, chat_request, body, choice, expected message) per recorded one-shot answer."""
    for prof in PROFILES:
        cls = registry.get_tool_parser(_profile(prof)["tool_parser"])
        for line in (SHARED / f"parity/cases/{prof}.jsonl").read_text().splitlines():
            case = json.loads(line)
            if case["kind"] == "chat_derender":
                body, resp = case["request"]["body"], case["response"]
                if resp["status"] != 200:
                    continue
                choices = body["generate_response"]["choices"]
                answers = {c["index"]: c["message"] for c in resp["body"]["choices"]}
            elif case["kind"] == "chat_derender_stream" and case.get("nonstream"):
                body = case["request_base"]
                chunks = [s["generate_chunk"]["choices"][0] for s in case["steps"] if s["generate_chunk"]["choices"]]
                choices = [{
                    "index": 0,
                    "token_ids": [i for c in chunks for i in c["token_ids"]],
                    "finish_reason": chunks[-1].get("finish_reason"),
                    "stop_reason": chunks[-1].get("stop_reason"),
                }]
                answers = {0: case["nonstream"]["choices"][0]["message"]}
            else:
                continue
            req = body.get("chat_request") or {}
            if req.get("stop") or not _runs_tool_parser(cls, req):
                continue
            for choice in choices:
                yield pytest.param(prof, req, body, choice, answers[choice["index"]],
                                   id=f"{case['id']}#{choice['index']}")


def _text(prof: str, choice: dict) -> str:
    tok = _tokenizer(prof)
    ids = list(choice["token_ids"])
    if (choice.get("finish_reason") or "stop") == "stop" and ids and (
        ids[-1] in _eos_ids(prof) or ids[-1] == choice.get("stop_reason")
    ):
        ids = ids[:-1]
    text = tok.decode(ids)
    while text.endswith("\ufffd"):  # the detokenizer holds back an incomplete character
        ids = ids[:-1]
        text = tok.decode(ids)
    return text


def _parse(prof: str, req: dict, body: dict, text: str, chunk: int | None) -> Delta:
    profile = _profile(prof)
    rname = profile.get("reasoning_parser")
    ctx = ParseContext(
        tools=req.get("tools"),
        tool_choice=req.get("tool_choice") or "auto",
        include_reasoning=req.get("include_reasoning", True),
        chat_template_kwargs=req.get("chat_template_kwargs") or {},
        prompt_token_ids=body.get("prompt_token_ids"),
        vocab=_tokenizer(prof),
        reasoning_parser=rname,
    )
    rcls = registry.get_reasoning_parser(rname) if rname else None
    if rname and rcls is None:
        pytest.skip(f"reasoning parser {rname} not available")
    tool = registry.get_tool_parser(profile["tool_parser"])(ctx)
    parser = OutputParser(ctx, rcls(ctx) if rcls else None, tool)
    pieces = [text] if not chunk else [text[i:i + chunk] for i in range(0, len(text), chunk)]
    acc = Delta()
    for d in [*(parser.feed(p, []) for p in pieces), parser.finish()]:
        acc.content += d.content
        acc.reasoning += d.reasoning
        acc.tool_calls += d.tool_calls
    if req.get("tool_choice") == "none":
        acc.tool_calls = []
    return acc


@pytest.mark.parametrize("chunk", [None, 3])
@pytest.mark.parametrize("prof,req,body,choice,want", list(_answers()))
def test_recorded_answer(prof, req, body, choice, want, chunk):
    got = _parse(prof, req, body, _text(prof, choice), chunk)
    want_calls = [(t["function"]["name"], t["function"]["arguments"]) for t in want.get("tool_calls") or []]
    assert [(t.name, t.arguments) for t in got.tool_calls] == want_calls
    content = got.content if not got.tool_calls or got.content.strip() else ""
    assert (content or None) == (want.get("content") or None)
    assert (got.reasoning or None) == (want.get("reasoning") or None)
    if prof == "kimi-k2":
        assert [t.id for t in got.tool_calls] == [t["id"] for t in want.get("tool_calls") or []]
