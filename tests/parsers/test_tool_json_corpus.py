"""Recorded vLLM 0.33 derender answers replayed through the marker + JSON tool parsers.

Texts are decoded with the profile's real tokenizer (``tokenizer.json``; tekken through
mistral-common), skipping nothing, with the stop token removed as derender does. The message
fields are then assembled with vLLM's rules for what a parser's content becomes.
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
PROFILES = ("qwen3", "llama3-json", "phi4-mini", "granite", "mistral-v3-spm", "mistral-tekken")


@lru_cache(maxsize=None)
def _profile(name: str) -> dict:
    return json.loads((SHARED / "parity/profiles.json").read_text())["profiles"][name]


def _folder(profile: dict) -> Path:
    return (SHARED / "parity" / profile["model"]).resolve()


class _Tekken:
    """mistral-common's tekken tokenizer, keeping special tokens in decoded text."""

    def __init__(self, folder: Path) -> None:
        from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        self._tok = MistralTokenizer.from_file(str(folder / "tekken.json")).instruct_tokenizer.tokenizer
        self._keep = SpecialTokenPolicy.KEEP
        self.all_special_ids = frozenset()

    def decode(self, ids, skip_special_tokens=False):
        return self._tok.decode(ids, special_token_policy=self._keep)

    def token_to_id(self, token):
        return None

    def id_to_token(self, token_id):
        return None


@lru_cache(maxsize=None)
def _tokenizer(name: str):
    folder = _folder(_profile(name))
    if (folder / "tekken.json").exists():
        return _Tekken(folder)
    return HFTokenizer(folder, json.loads((folder / "tokenizer_config.json").read_text()))


def _stop_ids(profile: dict) -> set[int]:
    eos = json.loads((_folder(profile) / "generation_config.json").read_text()).get("eos_token_id")
    ids = set(eos if isinstance(eos, list) else [eos])
    return ids | set((profile.get("special_ids") or {}).get(k) for k in ("</s>",)) - {None}


def _uses_tool_parser(cls, req: dict) -> bool:
    choice = req.get("tool_choice") or ("auto" if req.get("tools") else "none")
    if choice == "auto":
        return bool(req.get("tools"))
    if choice == "none":
        return getattr(cls, "engine_based", False)
    return not getattr(cls, "supports_required_and_named", True)


def _cases():
    for prof in PROFILES:
        cls = registry.get_tool_parser(_profile(prof)["tool_parser"])
        for line in (SHARED / f"parity/cases/{prof}.jsonl").read_text().splitlines():
            case = json.loads(line)
            if case["kind"] != "chat_derender" or case["response"]["status"] != 200:
                continue
            req = case["request"]["body"].get("chat_request")
            if not req or req.get("stop") or not _uses_tool_parser(cls, req):
                continue
            yield pytest.param(prof, case, id=case["id"])


def _parse(prof: str, case: dict, choice: dict, chunk: int | None) -> Delta:
    profile = _profile(prof)
    tok = _tokenizer(prof)
    body = case["request"]["body"]
    req = body["chat_request"]
    ids = list(choice["token_ids"])
    if choice["finish_reason"] == "stop" and ids and (
        ids[-1] in _stop_ids(profile) or ids[-1] == choice.get("stop_reason")
    ):
        ids = ids[:-1]
    text = tok.decode(ids, skip_special_tokens=False)
    rname = profile.get("reasoning_parser")
    ctx = ParseContext(
        tools=req.get("tools"),
        tool_choice=req.get("tool_choice") or ("auto" if req.get("tools") else "none"),
        include_reasoning=req.get("include_reasoning", True),
        chat_template_kwargs=req.get("chat_template_kwargs") or {},
        prompt_token_ids=body.get("prompt_token_ids") or [],
        vocab=tok,
        reasoning_parser=rname,
    )
    rcls = registry.get_reasoning_parser(rname) if rname else None
    if rname and rcls is None:
        pytest.skip(f"reasoning parser {rname} not available")
    tool = registry.get_tool_parser(profile["tool_parser"])(ctx)
    parser = OutputParser(ctx, rcls(ctx) if rcls else None, tool)
    acc = Delta()
    pieces = [text] if not chunk else [text[i : i + chunk] for i in range(0, len(text), chunk)]
    for d in [*(parser.feed(p, []) for p in pieces), parser.finish()]:
        acc.content += d.content
        acc.reasoning += d.reasoning
        acc.tool_calls += d.tool_calls
    return acc


def _message(cls, req: dict, d: Delta) -> dict:
    """vLLM's assembly of a parser's answer into message fields."""
    forced = req.get("tool_choice") not in (None, "auto", "none")
    content: str | None = d.content
    if d.tool_calls:
        content = content if content.strip() else None
    elif forced and not content.strip():
        content = None
    elif getattr(cls, "engine_based", False) and req.get("tools") and req.get("tool_choice") != "none":
        content = content or None
    return {
        "content": content,
        "reasoning": d.reasoning or None,
        "tool_calls": [(t.name, t.arguments) for t in d.tool_calls],
    }


@pytest.mark.parametrize("chunk", [None, 3])
@pytest.mark.parametrize("prof,case", list(_cases()))
def test_corpus_case(prof, case, chunk):
    cls = registry.get_tool_parser(_profile(prof)["tool_parser"])
    req = case["request"]["body"]["chat_request"]
    choices = case["request"]["body"]["generate_response"]["choices"]
    expected = {c["index"]: c for c in case["response"]["body"]["choices"]}
    for choice in choices:
        want = expected[choice["index"]]["message"]
        got = _message(cls, req, _parse(prof, case, choice, chunk))
        want_calls = [(t["function"]["name"], t["function"]["arguments"]) for t in want.get("tool_calls") or []]
        if any("\ufffd" in a for _, a in want_calls):
            pytest.skip("vLLM's tekken detokenizer emits U+FFFD here; a detokenizer matter")
        assert got["tool_calls"] == want_calls
        want_content = want.get("content")
        if prof == "mistral-v3-spm" and want_content and got["content"]:
            # mistral-common's SentencePiece decode keeps the leading "▁" space that
            # tokenizer.json drops; that is the detokenizer's concern, not the parser's.
            want_content = want_content.removeprefix(" ").replace("[TOOL_CALLS][", "[TOOL_CALLS] [")
        if forced_content_quirk(req, want_content, got["content"]):
            continue
        assert got["content"] == want_content
        if want.get("tool_calls") and prof.startswith("mistral"):
            assert all(len(t.id) == 9 and t.id.isalnum() for t in _parse(prof, case, choice, None).tool_calls)


def forced_content_quirk(req: dict, want: str | None, got: str | None) -> bool:
    """vLLM reports "" (not null) content for required/named tool_choice; derender's concern."""
    return req.get("tool_choice") not in (None, "auto", "none") and want == "" and got is None
