"""Streaming derender on the wire: chunk shapes, vLLM's errors, and a safe, constant-size state."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import INCREMENTAL, MODELS, PROFILES, WHOLE
from test_stream_invariance import CHAT_PATH, COMPLETION_PATH, Client, folded_oneshot, folded_stream, stream_choice
from tokenbridge.model.tokenizer import HFTokenizer

QWEN3 = PROFILES["qwen3"]["served_name"]
PLAIN = PROFILES["qwen3-plain"]["served_name"]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
REASONING_AND_CALL = (
    "Let me check the weather in Zürich 😀.</think>\n\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>'
)


@pytest.fixture(scope="module")
def tok() -> HFTokenizer:
    folder = MODELS / "qwen3"
    return HFTokenizer(folder, json.loads((folder / "tokenizer_config.json").read_text()))


@pytest.fixture(scope="module")
def prompt(tok) -> list[int]:
    return tok.encode("<|im_start|>user\nWeather in Zürich?<|im_end|>\n<|im_start|>assistant\n")


@pytest.fixture(scope="module")
def qwen3(servers) -> Client:
    """Tool calls streamed whole (``--tool-call-streaming whole``)."""
    return Client(servers.port("qwen3", WHOLE))


@pytest.fixture(scope="module")
def qwen3_incremental(servers) -> Client:
    return Client(servers.port("qwen3", INCREMENTAL))


@pytest.fixture(scope="module")
def plain(servers) -> Client:
    return Client(servers.port("qwen3-plain"))


def chat_base(prompt: list[int], model: str = QWEN3, **request) -> dict:
    return {"model": model, "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
            "chat_request": dict({"model": model, "messages": [{"role": "user", "content": "Weather?"}]}, **request)}


def call(client: Client, base: dict, choices: list[dict], state=None, path=CHAT_PATH, **chunk) -> tuple[int, dict]:
    return client.post(path, dict(base, stream=True, stream_state=state,
                                  generate_chunk=dict({"request_id": "chatcmpl-t", "choices": choices}, **chunk)))


def assert_refused(status: int, body: dict, *words: str, decoded: bool = False) -> None:
    """A 400 envelope for a bad ``stream_state``, its message naming what is wrong: a state that
    fails decoding is a request-validation error on the field (vLLM's "Bad Request" shape), one
    that decodes but cannot continue (``decoded``) a BadRequestError."""
    assert status == 400, body
    err = body["error"]
    if decoded:
        assert (err["type"], err["code"]) == ("BadRequestError", 400), err
    else:
        assert (err["type"], err["code"]) == ("Bad Request", 400) and err["param"].endswith("stream_state"), err
    assert all(w in err["message"] for w in words), err["message"]


def one_token_stream(client: Client, base: dict, ids: list[int], path=CHAT_PATH, finish="stop") -> tuple[list, list]:
    chunks, states, state = [], [], None
    for k, t in enumerate(ids):
        last = k == len(ids) - 1
        status, body = call(client, base, [{"index": 0, "token_ids": [t], "finish_reason": finish if last else None}],
                            state, path)
        assert status == 200, body
        chunks.append(body["chunk"])
        state = body["stream_state"]
        states.append(state)
    return chunks, states


# ----------------------------------------------------------------------------- chunk shapes


def test_role_is_sent_once_and_delta_keys_are_always_present(plain, tok, prompt):
    chunks, _ = one_token_stream(plain, chat_base(prompt, PLAIN), tok.encode("Hi there, héllo!") + [tok.token_to_id("<|im_end|>")])
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert [d["role"] for d in deltas] == ["assistant"] + [None] * (len(deltas) - 1)
    assert all({"role", "content", "reasoning"} <= d.keys() and "tool_calls" not in d for d in deltas)
    assert "".join(d["content"] or "" for d in deltas) == "Hi there, héllo!"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["object"] == "chat.completion.chunk" and chunks[-1]["id"] == "chatcmpl-t"


def test_tool_call_arrives_whole_with_an_id_and_finish_reason_becomes_tool_calls(qwen3, tok, prompt):
    ids = tok.encode(REASONING_AND_CALL) + [tok.token_to_id("<|im_end|>")]
    chunks, _ = one_token_stream(qwen3, chat_base(prompt, tools=TOOLS), ids)
    calls = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    assert len(calls) == 1
    call0 = calls[0]
    assert call0["id"].startswith("chatcmpl-tool-") and call0["type"] == "function" and call0["index"] == 0
    assert call0["function"]["name"] == "get_weather"
    assert json.loads(call0["function"]["arguments"]) == {"city": "Zürich"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert "".join(c["choices"][0]["delta"]["reasoning"] or "" for c in chunks) == "Let me check the weather in Zürich 😀."


def test_incremental_call_opens_with_its_name_and_streams_its_arguments(qwen3_incremental, tok, prompt):
    ids = tok.encode(REASONING_AND_CALL) + [tok.token_to_id("<|im_end|>")]
    chunks, _ = one_token_stream(qwen3_incremental, chat_base(prompt, tools=TOOLS), ids)
    entries = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    opening, rest = entries[0], entries[1:]
    assert opening["id"].startswith("chatcmpl-tool-") and opening["function"] == {"name": "get_weather", "arguments": None}
    assert len(rest) > 3 and all(e["id"] is None and e["function"]["name"] is None for e in rest)
    assert json.loads("".join(e["function"]["arguments"] for e in rest)) == {"city": "Zürich"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_usage_only_chunk_returns_no_choices_and_keeps_the_role_for_later(plain, tok, prompt):
    base = chat_base(prompt, PLAIN)
    status, body = call(plain, base, [], usage={"prompt_tokens": 7, "completion_tokens": 0})
    assert status == 200 and body["chunk"]["choices"] == []
    assert body["chunk"]["usage"] == {"prompt_tokens": len(prompt), "total_tokens": len(prompt), "completion_tokens": 0,
                                      "prompt_tokens_details": None, "completion_tokens_details": None}
    status, body = call(plain, base, [{"index": 0, "token_ids": tok.encode("Hello")}], body["stream_state"])
    assert body["chunk"]["choices"][0]["delta"]["role"] == "assistant"
    assert body["chunk"]["usage"] is None


def test_finish_only_chunk_flushes_what_the_parser_held(qwen3, tok, prompt):
    base = chat_base(prompt, tools=TOOLS)
    ids = tok.encode(REASONING_AND_CALL)
    status, body = call(qwen3, base, [{"index": 0, "token_ids": ids}])
    assert status == 200 and "tool_calls" not in body["chunk"]["choices"][0]["delta"]
    status, body = call(qwen3, base, [{"index": 0, "token_ids": [], "finish_reason": "length"}], body["stream_state"])
    choice = body["chunk"]["choices"][0]
    assert choice["delta"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert choice["finish_reason"] == "length"


def test_each_choice_index_streams_with_its_own_state(plain, tok, prompt):
    base = chat_base(prompt, PLAIN)
    texts = {0: "First answer.", 1: "Zweite Antwort – ü."}
    states: dict[int, str | None] = {0: None, 1: None}
    out = {0: "", 1: ""}
    ids = {i: tok.encode(t) for i, t in texts.items()}
    for k in range(max(len(v) for v in ids.values())):
        for i in (0, 1):
            if k < len(ids[i]):
                status, body = call(plain, base, [{"index": i, "token_ids": [ids[i][k]]}], states[i])
                assert status == 200 and body["chunk"]["choices"][0]["index"] == i
                out[i] += body["chunk"]["choices"][0]["delta"]["content"] or ""
                states[i] = body["stream_state"]
    assert out == texts
    status, body = call(plain, base, [{"index": 1, "token_ids": [ids[1][0]]}], states[0])
    assert status == 400


def test_logprobs_are_carried_in_the_chunks(plain, tok, prompt):
    ids = tok.encode("日本語 ok")
    base = chat_base(prompt, PLAIN, logprobs=True, top_logprobs=1)
    lp = [{"token_id": t, "logprob": -0.5, "top_logprobs": [{"token_id": t, "logprob": -0.5}]} for t in ids]
    state, streamed = None, []
    for k, t in enumerate(ids):
        status, body = call(plain, base, [{"index": 0, "token_ids": [t], "logprobs": {"content": [lp[k]]}}], state)
        state = body["stream_state"]
        streamed += body["chunk"]["choices"][0]["logprobs"]["content"]
    status, oneshot = plain.post(CHAT_PATH, dict(base, generate_response={
        "request_id": "r", "choices": [{"index": 0, "token_ids": ids, "finish_reason": "length", "logprobs": {"content": lp}}]}))
    assert streamed == oneshot["choices"][0]["logprobs"]["content"]
    assert b"".join(bytes(e["bytes"]) for e in streamed).decode() == "日本語 ok"


def test_completion_stream_chunks_carry_text_and_absolute_offsets(servers, tok, prompt):
    client = Client(servers.port("qwen3-plain"))
    base = {"model": PLAIN, "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
            "completion_request": {"model": PLAIN, "prompt": "x", "logprobs": 0}}
    ids = tok.encode(" Paris. It is")
    state, text, offsets = None, "", []
    for t in ids:
        status, body = call(client, base, [{"index": 0, "token_ids": [t], "logprobs": {"content": [
            {"token_id": t, "logprob": -1.0, "top_logprobs": [{"token_id": t, "logprob": -1.0}]}]}}], state, COMPLETION_PATH)
        choice = body["chunk"]["choices"][0]
        assert body["chunk"]["object"] == "text_completion"
        text += choice["text"]
        offsets += choice["logprobs"]["text_offset"]
        state = body["stream_state"]
    assert text == " Paris. It is" and offsets == [0, 6, 7, 10]


# ------------------------------------------------------------------------------ vLLM's errors


def test_more_than_one_choice_in_a_chunk_is_refused(qwen3, prompt):
    status, body = call(qwen3, chat_base(prompt), [{"index": 0, "token_ids": [1]}, {"index": 1, "token_ids": [2]}])
    assert status == 400 and body["error"]["type"] == "BadRequestError"


@pytest.mark.parametrize("path", [CHAT_PATH, COMPLETION_PATH])
def test_stop_strings_are_refused(plain, prompt, path):
    key = "chat_request" if path == CHAT_PATH else "completion_request"
    base = {"model": PLAIN, "prompt_token_ids": prompt,
            key: {"model": PLAIN, "messages": [{"role": "user", "content": "x"}], "prompt": "x", "stop": ["\n"]}}
    status, body = call(plain, base, [{"index": 0, "token_ids": [1]}], path=path)
    assert status == 400 and "stop strings" in body["error"]["message"]


def test_missing_prompt_token_ids_is_refused_when_a_parser_is_configured(qwen3, prompt):
    base = chat_base(prompt)
    del base["prompt_token_ids"]
    status, body = call(qwen3, base, [{"index": 0, "token_ids": [1]}])
    assert status == 400 and "prompt_token_ids is required" in body["error"]["message"]


def test_output_growing_past_max_model_len_is_refused(qwen3, tok):
    long_prompt = [tok.encode("a")[0]] * (8192 - 6)
    base = chat_base(long_prompt)
    status, body = call(qwen3, base, [{"index": 0, "token_ids": [tok.encode("x")[0]] * 4}])
    assert status == 200
    status, body = call(qwen3, base, [{"index": 0, "token_ids": [tok.encode("x")[0]] * 4}], body["stream_state"])
    assert status == 400 and "max_model_len" in body["error"]["message"]


# ------------------------------------------------------------------------------------ state


def _first_state(client: Client, prompt: list[int], tok) -> tuple[dict, str]:
    base = chat_base(prompt, tools=TOOLS)
    status, body = call(client, base, [{"index": 0, "token_ids": tok.encode("Let me see")}])
    assert status == 200
    return base, body["stream_state"]


def _flip(state: str, i: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(state + "=" * (-len(state) % 4)))
    raw[i % len(raw)] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def test_tampered_state_is_refused_with_400(qwen3, tok, prompt):
    base, state = _first_state(qwen3, prompt, tok)
    for bad in (_flip(state, 0), _flip(state, 7), _flip(state, -1), state[:-4], state + "AAAA", "", "not base64!", "x" * (2 << 20)):
        status, body = call(qwen3, base, [{"index": 0, "token_ids": [13]}], bad)
        assert status == 400, (bad[:40], body)
        assert body["error"]["code"] == 400


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.integers(0, 10_000), replacement=st.sampled_from("AZaz09-_"))
def test_any_edited_character_of_the_state_gives_400_never_500(qwen3, tok, prompt, position, replacement):
    base, state = _first_state(qwen3, prompt, tok)
    i = position % len(state)
    edited = state[:i] + replacement + state[i + 1:]
    status, body = call(qwen3, base, [{"index": 0, "token_ids": [13]}], edited)
    if edited == state:
        assert status == 200 and body["chunk"] == call(qwen3, base, [{"index": 0, "token_ids": [13]}], state)[1]["chunk"]
    else:
        assert_refused(status, body, "stream_state")


def test_state_from_another_model_or_endpoint_is_refused(qwen3, plain, tok, prompt):
    base, state = _first_state(qwen3, prompt, tok)
    status, body = call(plain, chat_base(prompt, PLAIN), [{"index": 0, "token_ids": [13]}], state)
    assert_refused(status, body, "integrity check")
    completion = {"model": QWEN3, "prompt_token_ids": prompt, "completion_request": {"model": QWEN3, "prompt": "x"}}
    status, body = call(qwen3, completion, [{"index": 0, "token_ids": [13]}], state, COMPLETION_PATH)
    assert_refused(status, body, "other derender endpoint")


def test_state_size_does_not_grow_with_the_output(qwen3, tok, prompt):
    text = " ".join(["The forecast says rain, so an umbrella is wise."] * 60)
    ids = tok.encode(text)[:600]
    _, states = one_token_stream(qwen3, chat_base(prompt, tools=TOOLS), ids, finish="length")
    sizes = [len(s) for s in states]
    assert max(sizes[50:]) - min(sizes[50:]) <= 16, sizes[50:80]
    assert max(sizes) < 200


def test_continuing_after_the_final_chunk_is_refused(plain, tok, prompt):
    base = chat_base(prompt, PLAIN)
    status, body = call(plain, base, [{"index": 0, "token_ids": tok.encode("Done"), "finish_reason": "length"}])
    status, body = call(plain, base, [{"index": 0, "token_ids": tok.encode(" more")}], body["stream_state"])
    assert_refused(status, body, "already finished", decoded=True)


# ----------------------------------------------------------------------- vLLM-shaped states


def _vllm_window(tok: HFTokenizer, prompt: list[int], ids: list[int], skip_special: bool) -> tuple[list[str], int, int]:
    """vLLM's ``detokenize_incrementally`` window after ``ids``, trimmed as its derender trims it."""
    tokens = tok.ids_to_tokens(prompt[-7:], skip_special_tokens=skip_special)
    read = len(tokens)
    prefix = max(read - 5, 0)
    for t in ids:
        new = tok.ids_to_tokens([t], skip_special_tokens=skip_special)
        window = tokens + new
        prefix_text = tok.tokens_to_string(window[prefix:read])
        new_text = tok.tokens_to_string(window[prefix:])
        if len(new_text) > len(prefix_text) and not new_text.endswith("\ufffd"):
            prefix, read = read, len(window)
        tokens = window[prefix:]
        read -= prefix
        prefix = 0
    return tokens, prefix, read


@pytest.mark.parametrize("split", [1, 4, 9])
def test_vllm_shaped_state_continues_a_plain_stream(plain, tok, prompt, split):
    base = chat_base(prompt, PLAIN)
    ids = tok.encode("Grüße aus Zürich 😀, bis bald!")
    status, oneshot = plain.post(CHAT_PATH, dict(base, generate_response={
        "request_id": "r", "choices": [{"index": 0, "token_ids": ids, "finish_reason": "length"}]}))
    head = folded_stream([call(plain, base, [{"index": 0, "token_ids": ids[:split]}])[1]["chunk"]])
    prev, prefix, read = _vllm_window(tok, prompt, ids[:split], True)
    state = {"prev_tokens": prev, "prefix_offset": prefix, "read_offset": read, "role_sent": True,
             "logprob_context_token_ids": ids[:split][-4:], "logprob_text_offset": 0,
             "output_token_ids": [], "output_chunk_lens": [], "tools_streamed": False, "last_tool_call_ids": []}
    status, body = call(plain, base, [{"index": 0, "token_ids": ids[split:], "finish_reason": "length"}], state)
    assert status == 200
    assert body["chunk"]["choices"][0]["delta"]["role"] is None
    assert head["content"] + body["chunk"]["choices"][0]["delta"]["content"] == oneshot["choices"][0]["message"]["content"]


@pytest.mark.parametrize("split", [3, 12, 30])
def test_vllm_shaped_state_continues_a_parsed_stream_by_replaying_its_ids(qwen3, tok, prompt, split):
    base = chat_base(prompt, tools=TOOLS)
    ids = tok.encode(REASONING_AND_CALL) + [tok.token_to_id("<|im_end|>")]
    choice = {"index": 0, "token_ids": ids, "finish_reason": "stop"}
    status, oneshot = qwen3.post(CHAT_PATH, dict(base, generate_response={"request_id": "r", "choices": [choice],
                                                                          "prompt_token_ids": prompt}))
    head = stream_choice(qwen3, CHAT_PATH, base, "r", dict(choice, token_ids=ids[:split], finish_reason=None),
                         [(0, split // 2), (split // 2, split)])
    state = {"role_sent": True, "output_token_ids": ids[:split], "output_chunk_lens": [split // 2, split - split // 2],
             "logprob_context_token_ids": ids[:split][-4:], "tools_streamed": False, "last_tool_call_ids": []}
    status, body = call(qwen3, base, [{"index": 0, "token_ids": ids[split:], "finish_reason": "stop"}], state)
    assert status == 200, body
    assert folded_stream(head + [body["chunk"]]) == folded_oneshot(oneshot["choices"][0])
    status, again = call(qwen3, base, [{"index": 0, "token_ids": ids[split:split + 1]}], body["stream_state"])
    assert status == 400  # the returned state is ours, and that stream has finished


@pytest.mark.parametrize(
    "state",
    [
        {"output_token_ids": [5, 6, 7], "output_chunk_lens": [1]},
        {"output_token_ids": [5], "output_chunk_lens": [0, 1]},
        {"prev_tokens": ["a"] * 2000},
        {"logprob_context_token_ids": [1, 2, 3, 4, 5]},
        {"prefix_offset": -1},
        {"output_token_ids": [-3], "output_chunk_lens": [1]},
        {"role_sent": "maybe"},
        [1, 2, 3],
        42,
    ],
)
def test_invalid_vllm_shaped_state_is_a_400(qwen3, prompt, state):
    status, body = call(qwen3, chat_base(prompt), [{"index": 0, "token_ids": [13]}], state)
    assert status == 400 and body["error"]["code"] == 400


def test_inconsistent_vllm_window_is_a_400(plain, prompt):
    state = {"prev_tokens": ["a", "b"], "prefix_offset": 2, "read_offset": 1}
    status, body = call(plain, chat_base(prompt, PLAIN), [{"index": 0, "token_ids": [13]}], state)
    assert_refused(status, body, "invalid stream_state", decoded=True)
