"""The prompt memo changes speed, never answers: a conversation rendered again (a memo hit,
from its third render on: the second fills the memo) gets vLLM's recorded answer, a hit still
runs the length check, and templates that read the clock are never memoized."""

from __future__ import annotations

import pytest

from tests.conftest import corpus_cases, post, replay
from tokenbridge.model.prompts import PromptMemo

PROFILES = ("qwen3", "llama3-json", "glm45")


def _chat_renders():
    for profile in PROFILES:
        for case in corpus_cases(profile, {"chat_render"}):
            yield pytest.param(profile, case, id=case["id"])


@pytest.mark.parametrize("profile,case", list(_chat_renders()))
def test_second_render_of_a_conversation_matches_vllm(servers, profile, case):
    port = servers.port(profile)
    req = case["request"]
    for _ in range(3):
        status, body = replay.http(port, req["method"], req["path"], req.get("body"), req.get("raw"))
        assert replay.compare_response(case["response"], status, body) is None


def test_tokenize_then_render_still_rejects_an_overlong_prompt(servers):
    """``/tokenize`` has no length limit and fills the memo; the render after it must still
    answer the character-bound error a first render gives."""
    port = servers.port("qwen3")
    # Over 8192 x 128 characters, yet few enough tokens (runs of spaces) for the memo to keep.
    messages = [{"role": "user", "content": "x" + " " * 1_100_000 + "y"}]
    for _ in range(2):  # the second fills the memo
        status, counted = post(port, "/tokenize", {"model": "Qwen/Qwen3-8B", "messages": messages})
        assert status == 200 and counted["count"] > 8192
    body = {"model": "Qwen/Qwen3-8B", "messages": messages}
    status, first = post(port, "/v1/chat/completions/render", body)
    status2, again = post(port, "/v1/chat/completions/render", body)
    assert status == status2 == 400
    assert first == again
    assert "characters" in first["error"]["message"], first


def test_memo_hit_equals_a_fresh_render(servers):
    port = servers.port("qwen3")
    body = {
        "model": "Qwen/Qwen3-8B",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "<think>\nlook it up\n</think>\n\nChecking."},
            {"role": "user", "content": "And Rome?"},
        ],
        "chat_template_kwargs": {"enable_thinking": False},
    }
    first, second, third = (post(port, "/v1/chat/completions/render", body)[1] for _ in range(3))
    flipped = post(port, "/v1/chat/completions/render", {**body, "chat_template_kwargs": {"enable_thinking": True}})[1]
    assert first["token_ids"] == second["token_ids"] == third["token_ids"]
    assert first["request_id"] != second["request_id"]
    assert flipped["token_ids"] != first["token_ids"]  # the template kwargs are part of the key


@pytest.mark.parametrize("template", ["{{ strftime_now('%H:%M:%S') }}", "{{ lipsum(1) }}"])
def test_templates_that_read_the_clock_or_random_text_are_not_memoized(template):
    memo = PromptMemo(template)
    assert memo.key(([{"role": "user", "content": "hi"}], None, {}, None, False)) is None


def test_a_conversation_is_keyed_from_its_second_render_on():
    memo = PromptMemo("{{ messages }}")
    inputs = ([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}], None, {}, None, False)
    assert memo.key(inputs) is None
    assert memo._entries.misses == 1  # a first render counts as a lookup that missed
    again = ([dict(m) for m in inputs[0]], None, {}, None, False)  # equal, not the same objects
    assert memo.key(again) == memo.key(inputs) is not None
    other = ([{"role": "system", "content": "s"}, {"role": "user", "content": "ho"}], None, {}, None, False)
    assert memo.key(other) is None


def test_memo_stays_within_its_byte_budget():
    memo = PromptMemo("{{ messages }}", max_bytes=100_000)
    for i in range(200):
        memo.key(([{"role": "user", "content": f"turn {i}"}], None, {}, None, False))
        key = memo.key(([{"role": "user", "content": f"turn {i}"}], None, {}, None, False))
        memo.put(key, 10, list(range(500)))
    assert memo._entries.size <= 100_000
    newest = memo.key(([{"role": "user", "content": "turn 199"}], None, {}, None, False))
    oldest = memo.key(([{"role": "user", "content": "turn 0"}], None, {}, None, False))
    assert memo.get(newest) == (10, list(range(500)))
    assert memo.get(oldest) is None


def test_conversations_never_seen_are_rarely_keyed():
    """A first render only leaves a glance; a glance that looks seen by chance costs a key and
    a memo entry nobody asks for again, so it must stay rare however many renders pass."""
    memo = PromptMemo("{{ messages }}")
    n = 200_000
    keyed = sum(
        memo.key(([{"role": "user", "content": f"Request {i}: the same long tail of text " * 9}], None, {}, None, False))
        is not None
        for i in range(n)
    )
    assert keyed / n < 0.002, keyed / n
    again = ([{"role": "user", "content": f"Request {n - 1}: the same long tail of text " * 9}], None, {}, None, False)
    assert memo.key(again) is not None  # a recent conversation is still recognised
