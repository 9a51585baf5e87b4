"""gpt-oss chat render through Harmony, in process, against vLLM 0.33's recorded prompts."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("openai_harmony")

from conftest import MODELS, corpus_cases, replay  # noqa: E402

from tokenbridge.protocol.errors import ApiError  # noqa: E402
from tokenbridge.render.harmony import (  # noqa: E402
    is_harmony_model,
    legacy_tool_call_headers,
    render_harmony_ids,
)

MODEL = MODELS / "gpt-oss"
if not (MODEL / "o200k_base.tiktoken").is_file():
    pytest.skip("gpt-oss model folder not available", allow_module_level=True)
os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(MODEL))

from tokenbridge.model.harmony import harmony_encoding

CASES = [
    c
    for c in corpus_cases("gpt-oss", {"chat_render", "tokenize"})
    if c["response"]["status"] == 200 and "messages" in c["request"]["body"]
]


@pytest.fixture(autouse=True)
def corpus_date(monkeypatch):
    """The corpus was recorded under faketime; the system message prints that date."""
    monkeypatch.setenv("VLLM_SYSTEM_START_DATE", replay.FAKE_DATE.split()[0])


def render(messages, tools=None, effort=None) -> str:
    ids = render_harmony_ids(messages, tools, effort)
    return harmony_encoding().decode(ids)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_corpus_prompt_ids(case):
    body = case["request"]["body"]
    expected = case["response"]["body"]
    expected = expected["token_ids"] if "token_ids" in expected else expected["tokens"]
    tools = body.get("tools") or None
    assert render_harmony_ids(body["messages"], tools, body.get("reasoning_effort")) == expected


def test_selected_by_model_type():
    assert is_harmony_model({"model_type": "gpt_oss"})
    assert not is_harmony_model({"model_type": "qwen3"})


def test_system_message_and_generation_prompt():
    text = render([{"role": "user", "content": "hi"}], effort="high")
    assert text.startswith("<|start|>system<|message|>You are ChatGPT")
    assert "Current date: 2026-01-15" in text
    assert "Reasoning: high" in text
    assert "<|start|>developer" not in text
    assert text.endswith("<|start|>user<|message|>hi<|end|><|start|>assistant")


def test_instructions_and_tools_go_to_developer():
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    text = render([{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                   {"role": "user", "content": "hi"}], tools)
    dev = text.split("<|start|>developer<|message|>", 1)[1].split("<|end|>", 1)[0]
    assert dev.startswith("# Instructions\n\nBe brief.")
    assert "namespace functions" in dev and "type get_weather" in dev


def test_history_channels_and_tool_calls():
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "reasoning": "Need a tool.", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    text = render(messages)
    assert "<|start|>assistant<|channel|>analysis<|message|>Need a tool.<|end|>" in text
    assert "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>" in text
    assert "<|start|>functions.get_weather<|channel|>commentary to=assistant<|message|>sunny<|end|>" in text


def test_answered_analysis_is_dropped():
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "reasoning": "old thought", "content": "answer"},
        {"role": "user", "content": "b"},
    ]
    text = render(messages)
    assert "old thought" not in text
    assert "<|channel|>final<|message|>answer" in text


def test_legacy_header_rewrite_leaves_other_headers():
    enc = harmony_encoding()
    new = enc.encode("<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}",
                     allowed_special="all")
    assert enc.decode(legacy_tool_call_headers(enc, new)) == (
        "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}"
    )
    plain = enc.encode("<|start|>user<|message|>hi<|end|>", allowed_special="all")
    assert legacy_tool_call_headers(enc, plain) == plain


@pytest.mark.parametrize("effort", ["none", "max"])
def test_unsupported_reasoning_effort(effort):
    with pytest.raises(ApiError):
        render_harmony_ids([{"role": "user", "content": "hi"}], None, effort)


def test_unknown_role_is_bad_request():
    with pytest.raises(ApiError, match="validation error for Author"):
        render_harmony_ids([{"role": "bogus", "content": "hi"}], None, None)


def test_continue_final_message_alone_is_ignored_as_vllm_does():
    """vLLM refuses continue_final_message with the default add_generation_prompt only where
    transformers renders the template; a Harmony prompt ignores both flags."""
    from tokenbridge.config import ServeConfig
    from tokenbridge.model.context import load_model
    from tokenbridge.protocol.openai import ChatCompletionRequest
    from tokenbridge.render.chat import render_chat

    model = load_model(str(MODEL), max_model_len=8192)
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "The"}]
    plain = render_chat(model, ServeConfig(), ChatCompletionRequest(messages=messages), "a")
    continued = render_chat(
        model, ServeConfig(), ChatCompletionRequest(messages=messages, continue_final_message=True), "b"
    )
    assert continued.token_ids == plain.token_ids
