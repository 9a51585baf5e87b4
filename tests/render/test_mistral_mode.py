"""``--tokenizer-mode mistral``: the mistral-common tokenizer and chat rendering, in process,
and recorded vLLM answers at the mode's edges, through real servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mistral_common")

from tokenbridge.derender.detokenizer import Detokenizer  # noqa: E402
from tokenbridge.model.mistral import MistralTokenizer, shorten_tool_call_ids  # noqa: E402
from tests.conftest import MODELS, replay, without_vllm_crash  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def spm() -> MistralTokenizer:
    pytest.importorskip("sentencepiece")
    return MistralTokenizer(MODELS / "mistral-v3-spm")


@pytest.fixture(scope="module")
def tekken() -> MistralTokenizer:
    return MistralTokenizer(MODELS / "mistral-tekken")


def _stream(tok: MistralTokenizer, prompt: list[int], ids: list[int]) -> str:
    detok = Detokenizer(tok, skip_special_tokens=True).seed(prompt)
    return "".join(detok.feed([i]) for i in ids)


def test_vocab_facts(spm, tekken):
    assert (spm.vocab_size, tekken.vocab_size) == (32768, 131072)
    assert spm.token_to_id("[TOOL_CALLS]") == 5 and tekken.token_to_id("[TOOL_CALLS]") == 9
    assert spm.eos_token_id == tekken.eos_token_id == 2
    assert tekken.bos_token_id in tekken.all_special_ids
    assert spm.kind == "mistral" and not spm.byte_level and spm.added_vocab == {}


def test_encode_never_parses_special_tokens(tekken):
    assert tekken.encode("hi", add_special_tokens=True)[0] == tekken.bos_token_id
    assert tekken.bos_token_id not in tekken.encode("<s>[INST]", add_special_tokens=False)


def test_keep_last_keeps_bos(tekken):
    text = "one two three four five six seven eight nine ten"
    full = tekken.encode(text)
    assert tekken.encode_keep_last(text, 4, add_special_tokens=True) == [tekken.bos_token_id, *full[-3:]]
    assert tekken.encode_keep_last(text, 4) == full[-4:]


def test_chat_prompt_ids(spm, tekken):
    msgs = [{"role": "user", "content": "hi"}]
    # <s>[INST]hi[/INST], as mistral-common's own encode_chat_completion gives it
    assert tekken.render_chat(msgs, None, True, False) == [1, 3, 8101, 4]
    with_tools = spm.render_chat(msgs, TOOLS, True, False)
    assert spm.token_to_id("[AVAILABLE_TOOLS]") in with_tools


@pytest.mark.parametrize(
    "messages,gen,cont,message",
    [
        ([{"role": "bogus", "content": "hi"}], True, False, "Unknown message role: bogus"),
        ([{"role": "assistant", "content": "x"}], True, False, "last message is from the assistant"),
        ([{"role": "user", "content": "x"}], False, True, "not from the assistant"),
    ],
)
def test_chat_errors_are_value_errors(tekken, messages, gen, cont, message):
    with pytest.raises(ValueError, match=message):
        tekken.render_chat(messages, None, gen, cont)


def test_tool_call_ids_are_shortened():
    msgs = [
        {"role": "assistant", "tool_calls": [{"id": "call_abc123456", "type": "function"}]},
        {"role": "tool", "tool_call_id": "call_abc123456", "content": "ok"},
    ]
    shorten_tool_call_ids(msgs)
    assert msgs[0]["tool_calls"][0]["id"] == msgs[1]["tool_call_id"] == "abc123456"


@pytest.mark.parametrize("text", ["日本語で 🚀🔥 and ∑∫√π.", "  leading spaces", "Line one\n\nthree\ttab"])
def test_incremental_detokenizer_matches_decode(spm, tekken, text):
    for tok in (spm, tekken):
        prompt = tok.render_chat([{"role": "user", "content": "hi"}], None, True, False)
        ids = tok.encode(text)
        # SentencePiece's decode drops the leading dummy-prefix space; the stream keeps it.
        lead = " " if tok is spm else ""
        assert _stream(tok, prompt, ids) == lead + tok.decode(ids, skip_special_tokens=True)


def test_tool_calls_marker_survives_skip_special(spm, tekken):
    for tok in (spm, tekken):
        marker = tok.token_to_id("[TOOL_CALLS]")
        ids = [marker, *tok.encode('[{"name": "f"}]'), tok.eos_token_id]
        out = _stream(tok, [1, 3, 4], ids)
        assert out.startswith("[TOOL_CALLS]") and "</s>" not in out


def test_tekken_partial_utf8_pieces_join(tekken):
    ids = tekken.encode("🚀")
    tokens = tekken.ids_to_tokens(ids, skip_special_tokens=True)
    assert all(isinstance(t, str) for t in tokens)
    assert tekken.tokens_to_string(tokens) == "🚀"
    assert tekken.decode(ids) == "🚀"


EDGES = json.loads((Path(__file__).parent / "data" / "mistral_edges_vllm.json").read_text())["cases"]


@pytest.mark.parametrize("case", EDGES, ids=[f"{c['profile']} {c['note']}" for c in EDGES])
def test_mistral_edges_get_vllms_answer(servers, case):
    """Recorded from vLLM 0.33: tool-call arguments that are not a JSON object render as ``{}``;
    ids past the vocabulary fail to detokenize (vLLM's message, as a 400 where vLLM crashes with a 500);
    a ``[TOOL_CALLS]`` output leaves null content beside the call, even where the call is
    dropped (no tools, ``tool_choice="none"``)."""
    req = case["request"]
    status, body = replay.http(servers.port(case["profile"]), "POST", req["path"], req["body"])
    expected = without_vllm_crash(case["response"])
    if expected is not case["response"]:
        assert body["error"]["message"] == expected["body"]["error"]["message"]
    assert replay.compare_response(expected, status, body) is None
