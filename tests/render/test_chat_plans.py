"""A kept chat plan changes speed, never answers: each corpus chat render, made right after a
render of the same fields with other messages (which keeps the plan, and the body's shape),
gets vLLM's recorded answer; the plan's key tells apart what the answer depends on; a known
shape renders a plain conversation as the full render does."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import MODELS, PROFILES, corpus_cases, replay
from tokenbridge.cli import parse_serve_args
from tokenbridge.config import ServeConfig
from tokenbridge.protocol.openai import ChatCompletionRequest
from tokenbridge.render.chat import render_known_chat
from tokenbridge.render.chat_plans import ChatPlans, chat_shapes, plain_conversation
from tokenbridge.server.answer_memo import AnswerMemo
from tokenbridge.server.run import build

PATH = "/v1/chat/completions/render"

SEED_MESSAGES = [{"role": "user", "content": "Hello"}]


def _chat_renders():
    for profile in PROFILES:
        for case in corpus_cases(profile, {"chat_render"}):
            body = case["request"].get("body")
            if isinstance(body, dict) and isinstance(body.get("messages"), list):
                yield pytest.param(profile, case, id=case["id"])


@pytest.mark.parametrize("profile,case", list(_chat_renders()))
def test_a_render_after_one_with_the_same_fields_matches_vllm(servers, profile, case):
    port = servers.port(profile)
    req = case["request"]
    seed = {**req["body"], "messages": SEED_MESSAGES}
    replay.http(port, "POST", req["path"], seed)
    for _ in range(2):
        status, body = replay.http(port, req["method"], req["path"], req.get("body"), req.get("raw"))
        assert replay.compare_response(case["response"], status, body) is None


def _request(**fields) -> ChatCompletionRequest:
    return msgspec.convert({"model": "m", "messages": SEED_MESSAGES, **fields}, ChatCompletionRequest)


def test_the_key_leaves_out_only_the_messages_and_the_request_id():
    plans, model, cfg = ChatPlans(), object(), ServeConfig()

    def key(**fields) -> bytes | None:
        return plans.key(model, cfg, _request(**fields), "chat")

    assert key(messages=[{"role": "user", "content": "other"}]) == key() == key(request_id="r-1")
    assert key(temperature=0.5) != key(temperature=0.7)
    assert key(vllm_xargs={"a": 1}) != key(vllm_xargs={"a": 1.0}) != key(vllm_xargs={"a": True})
    assert key(response_format={"type": "text", "x": 1}) != key(response_format={"x": 1, "type": "text"})
    assert key() != plans.key(model, cfg, _request(), "messages")
    assert key() != plans.key(model, ServeConfig(), _request(), "chat")


def test_a_plan_is_found_only_for_the_model_and_config_it_was_made_for():
    plans, model, cfg = ChatPlans(), object(), ServeConfig()
    key = plans.key(model, cfg, _request(), "chat")
    plans.put(key, model, cfg, "choices", "assembly")
    assert plans.get(key, model, cfg) == ("choices", "assembly")
    assert plans.get(key, object(), cfg) is None
    assert plans.get(key, model, ServeConfig()) is None


# ------------------------------------------------------------------ chat shapes


def test_a_plain_conversation_is_text_messages_of_the_plain_roles_only():
    def plain(messages) -> bool:
        return plain_conversation(json.dumps(messages).encode()) is not None

    assert plain([{"role": "system", "content": ""}, {"role": "user", "content": "hi"},
                  {"role": "assistant", "content": "yo"}])
    assert plain([{"content": "hi", "role": "user"}])
    assert not plain([])
    assert not plain({"role": "user", "content": "hi"})
    assert not plain([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert not plain([{"role": "user", "content": "hi", "name": "bob"}])
    assert not plain([{"role": "tool", "content": "42"}])
    assert not plain([{"role": "developer", "content": "be terse"}])
    assert not plain([{"role": "assistant", "content": None}])
    assert not plain([{"role": "user"}])
    assert not plain([{"role": {}, "content": "hi"}])
    assert not plain([{"role": ["user"], "content": "hi"}])
    assert plain_conversation(b'[{"role":"user","content":"\\ud800"}]') is None  # json.loads only


@pytest.fixture(scope="module")
def apps():
    """Servers as ``tokenbridge serve`` builds them (in-process): a template minijinja renders,
    Jinja2 ones (one reads the clock, one refuses roles out of turn, two are given by
    ``--chat-template``), and a context so short that many conversations do not fit."""
    def app(folder: str, *flags: str):
        a = build(parse_serve_args([str(MODELS / folder), "--served-model-name", "m", *flags]))
        a.answer_memo = AnswerMemo(0)
        return a
    templates = MODELS / "templates"
    return {
        "qwen3": app("qwen3", "--tool-call-parser", "hermes", "--enable-auto-tool-choice", "--reasoning-parser", "qwen3"),
        "qwen3-short": app("qwen3", "--max-model-len", "96", "--reasoning-parser", "qwen3"),
        "llama3": app("llama3", "--tool-call-parser", "llama3_json", "--enable-auto-tool-choice"),
        "mistral": app("mistral-v0.1-spm"),
        "deepseek-r1": app("deepseek-v3", "--tool-call-parser", "deepseek_v3", "--enable-auto-tool-choice",
                           "--reasoning-parser", "deepseek_r1", "--chat-template",
                           str(templates / "deepseek-r1-tools.vllm.jinja")),
        "glm45": app("synthetic-families", "--tool-call-parser", "glm45", "--enable-auto-tool-choice",
                     "--reasoning-parser", "glm45", "--chat-template", str(templates / "glm-4.5.jinja")),
    }


TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
# The fields beside the messages: the shapes a conversation is rendered with.
SHAPES = [
    {},
    {"max_tokens": 7, "temperature": 0.2, "stream": True, "stream_options": {"include_usage": True}},
    {"tools": [TOOL], "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": False}},
    {"add_generation_prompt": False, "continue_final_message": True, "max_completion_tokens": 40000},
    {"request_id": "mine", "logprobs": True, "top_logprobs": 2, "echo": True, "add_special_tokens": True},
]
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40) | st.sampled_from([
    "", " ", "<think>\nhm\n</think>\n\nok", "<|im_end|>", "<tool_call>", "x-anthropic-billing-header: a\nrest",
    "<|eot_id|>", "Ünïcødé 👩‍👩‍👧 ", "\n\n",
])
conversations = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]), "content": _text}),
    min_size=1, max_size=5,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profile=st.sampled_from(["qwen3", "qwen3-short", "llama3", "mistral", "deepseek-r1", "glm45"]),
       shape=st.sampled_from(SHAPES), conversation=conversations)
def test_a_known_shape_renders_a_plain_conversation_as_the_full_render_does(apps, profile, shape, conversation):
    app = apps[profile]

    def ask(messages: list) -> tuple[int, bytes]:
        body = json.dumps({"model": "m", "messages": messages, **shape}).encode()
        status, _, payload = app.answer("POST", PATH, headers, body)
        return status, payload

    body = json.dumps({"model": "m", "messages": conversation, **shape}).encode()
    headers = {b"content-type": b"application/json", b"x-request-id": b"r-1"}
    chat_shapes.__init__()  # forget the shapes of earlier examples: the first render is a full one
    status, full = ask(conversation)
    event(f"{profile}: {status}")
    if status != 200:
        assert chat_shapes.look_up(body, app.model, app.cfg).shape is None  # a failed render keeps none
        ask([{"role": "user", "content": "Hi"}])  # the same fields: keeps the shape when it renders
    known = chat_shapes.look_up(body, app.model, app.cfg)
    assert known.conversation == (conversation if known.shape is not None else None)
    if status == 200:
        assert known.shape is not None
        lane = render_known_chat(app.model, app.cfg, known.shape, known.conversation, "r-1")
        assert msgspec.json.encode(lane) == full
    assert ask(conversation) == (status, full)  # through the shape, or the full render after it
