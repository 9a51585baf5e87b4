"""The official ``openai`` SDK as the client of the gateway, the stub engine behind it."""

from __future__ import annotations

import openai
import pytest

from tests.gateway.harness import gateways, stub_engine  # noqa: F401 (fixtures)

MODEL = "Qwen/Qwen3-8B"
# "Let me check.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>" + <|im_end|>
TOOL_CALL_IDS = [10061, 752, 1779, 624, 151668, 271, 151657, 198, 4913, 606, 788, 330, 455, 69364, 497, 330, 16370,
                 788, 5212, 8926, 788, 330, 59604, 95642, 151658, 151645]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture
def client(gateways, stub_engine):
    port = gateways.port("qwen3")
    stub_engine.control(outputs=[{"index": 0, "token_ids": TOOL_CALL_IDS, "finish_reason": "stop"}], chunking="one")
    yield openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
    stub_engine.control()


def test_sdk_chat_returns_reasoning_and_the_tool_call(client):
    r = client.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS)
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert msg.tool_calls[0].function.name == "get_weather"
    assert msg.tool_calls[0].function.arguments == '{"city": "Paris"}'
    assert msg.model_extra["reasoning"] == "Let me check.\n"
    assert r.usage.completion_tokens == len(TOOL_CALL_IDS)


def test_sdk_stream_adds_up_to_the_same_answer(client):
    stream = client.chat.completions.create(
        model=MODEL, messages=MESSAGES, tools=TOOLS, stream=True, stream_options={"include_usage": True})
    reasoning, name, args, finish, usage, roles = "", "", "", None, None, []
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            d = c.delta
            roles.append(d.role)
            reasoning += (d.model_extra or {}).get("reasoning") or ""
            for tc in d.tool_calls or []:
                name += tc.function.name or ""
                args += tc.function.arguments or ""
            finish = c.finish_reason or finish
    assert roles[0] == "assistant"
    assert (reasoning, name, args, finish) == ("Let me check.\n", "get_weather", '{"city": "Paris"}', "tool_calls")
    assert usage.completion_tokens == len(TOOL_CALL_IDS) and usage.prompt_tokens > 0


def test_sdk_completion_stream_applies_stop_strings_and_aborts_the_engine(client, stub_engine):
    # the tokens' text is "Let me check.\n</think>…": stop at "check" once it is complete,
    # while the engine is still sending (a stream it already ended has nothing to abort)
    stub_engine.control(outputs=[{"index": 0, "token_ids": TOOL_CALL_IDS, "finish_reason": "stop"}], chunking="one",
                        delay=0.01)
    stream = client.completions.create(model=MODEL, prompt="Hello", stop=["check"], stream=True,
                                       extra_headers={"X-Request-Id": "sdk-stop-1"})
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == "Let me "
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].choices[0].model_extra["stop_reason"] == "check"
    stats = stub_engine.stats()
    assert "stop" not in stats["last_request"]["sampling_params"]
    assert "generate-tokens-sdk-stop-1" in stats["aborted"]


def test_sdk_reports_engine_errors_as_api_errors(client, stub_engine):
    stub_engine.control(status=400, message="bad engine input", type="BadRequestError")
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert "bad engine input" in str(e.value)


@pytest.mark.parametrize("stream", [False, True])
def test_sdk_min_tokens_passes_over_a_stop_string_completed_within_them(client, stream):
    # "Let" " me" " check": " me" completes at token 2, within min_tokens=2, so it does not
    # count even though its text is still held (it begins "Let me c"); "Let me c" ends in
    # token 3 and stops. Without min_tokens " me" stops at token 2.
    def answer(**extra) -> tuple[str, str | None]:
        r = client.completions.create(model=MODEL, prompt="Hello", stop=[" me", "Let me c"], stream=stream, **extra)
        if not stream:
            return r.choices[0].text, r.choices[0].model_extra["stop_reason"]
        chunks = [c for c in r if c.choices]
        return "".join(c.choices[0].text for c in chunks), chunks[-1].choices[0].model_extra["stop_reason"]

    assert answer() == ("Let", " me")
    assert answer(extra_body={"min_tokens": 2}) == ("", "Let me c")


def test_sdk_multi_prompt_completion_stream_interleaves_the_prompts(client, stub_engine):
    # both engine streams run at once (an event every 10 ms): their chunks reach the client as
    # they come, as vLLM merges them, rather than the second prompt's after the whole first
    stub_engine.control(outputs=[{"index": 0, "token_ids": TOOL_CALL_IDS, "finish_reason": "stop"}], chunking="one",
                        delay=0.01)
    stream = client.completions.create(model=MODEL, prompt=["Hello", "World"], stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    order = [c.choices[0].index for c in chunks if c.choices]
    assert order.index(1) < len(order) - 1 - order[::-1].index(0)
    texts = ["".join(c.choices[0].text for c in chunks if c.choices and c.choices[0].index == i) for i in (0, 1)]
    assert texts[0] == texts[1] and texts[0].startswith("Let me check.\n</think>")
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop", "stop"]
    assert chunks[-1].usage.completion_tokens == 2 * len(TOOL_CALL_IDS)


@pytest.mark.parametrize("stream", [False, True])
def test_sdk_prompt_logprobs_are_refused_before_the_engine_is_asked(client, stub_engine, stream):
    # the engine's token stream carries no prompt logprobs: a 400, never an answer without them
    # (explicit prompt_logprobs with stream=True is vLLM's own 400, from render)
    before = stub_engine.stats()["requests"]
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL, prompt="Hello", echo=True, logprobs=1, stream=stream)
    assert "prompt_logprobs" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, extra_body={"prompt_logprobs": 2})
    assert "the engine's token stream does not carry prompt logprobs" in str(e.value)
    assert stub_engine.stats()["requests"] == before
