"""Recorded vLLM 0.33 derender answers, replayed through the tag parsers (real tokenizers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import Delta, ParseContext
from tokenbridge.parsers.output import OutputParser

SHARED = Path("/work/shared")
PROFILES = ("qwen3-coder", "glm45")


def _profile(name: str) -> dict:
    return json.loads((SHARED / "parity/profiles.json").read_text())["profiles"][name]


def _tokenizer(profile: dict) -> HFTokenizer:
    folder = (SHARED / "parity" / profile["model"]).resolve()
    return HFTokenizer(folder, json.loads((folder / "tokenizer_config.json").read_text()))


def _eos_ids(profile: dict) -> set[int]:
    folder = (SHARED / "parity" / profile["model"]).resolve()
    eos = json.loads((folder / "generation_config.json").read_text()).get("eos_token_id")
    return set(eos if isinstance(eos, list) else [eos])


def _cases():
    for prof in PROFILES:
        path = SHARED / f"parity/cases/{prof}.jsonl"
        for line in path.read_text().splitlines():
            case = json.loads(line)
            if case["kind"] != "chat_derender" or case["response"]["status"] != 200:
                continue
            req = case["request"]["body"].get("chat_request") or {}
            if not req.get("tools") or req.get("tool_choice", "auto") != "auto" or req.get("stop"):
                continue
            yield pytest.param(prof, case, id=case["id"])


def _parse(prof: str, case: dict, choice: dict, chunk: int | None = None) -> Delta:
    profile = _profile(prof)
    tok = _tokenizer(profile)
    body = case["request"]["body"]
    req = body["chat_request"]
    ids = list(choice["token_ids"])
    if choice["finish_reason"] == "stop" and ids and (
        ids[-1] in _eos_ids(profile) or ids[-1] == choice.get("stop_reason")
    ):
        ids = ids[:-1]
    text = tok.decode(ids, skip_special_tokens=False)
    rname = profile.get("reasoning_parser")
    ctx = ParseContext(
        tools=req["tools"], tool_choice="auto", include_reasoning=req.get("include_reasoning", True),
        chat_template_kwargs=req.get("chat_template_kwargs") or {},
        prompt_token_ids=body.get("prompt_token_ids") or [], vocab=tok, reasoning_parser=rname,
    )
    rcls = registry.get_reasoning_parser(rname) if rname else None
    tool = registry.get_tool_parser(profile["tool_parser"])(ctx)
    parser = OutputParser(ctx, rcls(ctx) if rcls else None, tool)
    acc = Delta()
    pieces = [text] if not chunk else [text[i : i + chunk] for i in range(0, len(text), chunk)]
    for d in [*(parser.feed(p, []) for p in pieces), parser.finish()]:
        acc.content += d.content
        acc.reasoning += d.reasoning
        acc.tool_calls += d.tool_calls
    return acc


@pytest.mark.parametrize("prof,case", list(_cases()))
@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_corpus_case(prof, case, chunk):
    profile = _profile(prof)
    rname = profile.get("reasoning_parser")
    has_reasoning = rname is not None and registry.get_reasoning_parser(rname) is not None
    choices = case["request"]["body"]["generate_response"]["choices"]
    for choice, want in zip(choices, case["response"]["body"]["choices"]):
        msg = want["message"]
        if rname and not has_reasoning and msg.get("reasoning") is not None:
            pytest.skip(f"reasoning parser {rname} not available yet")
        got = _parse(prof, case, choice, chunk)
        if not rname or has_reasoning:
            assert (got.content or None) == msg["content"]
            assert (got.reasoning or None) == msg.get("reasoning")
        calls = {}
        for tc in got.tool_calls:
            entry = calls.setdefault(tc.index, ["", ""])
            entry[0] += tc.name or ""
            entry[1] += tc.arguments
        want_calls = [
            [t["function"]["name"], t["function"]["arguments"]] for t in msg.get("tool_calls") or []
        ]
        assert [calls[i] for i in sorted(calls)] == want_calls
