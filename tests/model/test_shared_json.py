"""Tool-call arguments parsed once and shared across renders: the prompt is the one an
unshared parse and ``json.dumps`` give, no template can change a shared object, and the
cache stays within its character budget."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.model import template
from tokenbridge.model.template import SharedJSON
from tokenbridge.render import conversation as conv

from conftest import SHARED

QWEN3 = json.loads((SHARED / "models" / "qwen3" / "tokenizer_config.json").read_text())["chat_template"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _conversation(arguments: list[str]) -> list[dict]:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": a}} for i, a in enumerate(arguments)]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "done", "tool_call_id": "c0"},
        {"role": "user", "content": "again"},
    ]


def _unshared_render(messages: list[dict]) -> str:
    """The prompt with every argument parsed fresh and dumped by ``json.dumps`` itself."""
    prepared = conv.prepare_messages(messages, "string")
    for m in prepared:
        for call in m.get("tool_calls", []):
            raw = next(c for c in sum((x.get("tool_calls", []) for x in messages), []) if c["id"] == call["id"])
            call["function"]["arguments"] = conv._tool_arguments(raw["function"]["arguments"])
    env_tojson = template.environment().filters["tojson"]
    template.environment().filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=kw.get("ensure_ascii", False))
    try:
        return template.render(QWEN3, messages=prepared, add_generation_prompt=True)
    finally:
        template.environment().filters["tojson"] = env_tojson


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=4), min_size=1, max_size=3))
def test_shared_arguments_render_the_prompt_an_unshared_parse_renders(objects):
    messages = _conversation([json.dumps(o, ensure_ascii=bool(i % 2)) for i, o in enumerate(objects)])
    expected = _unshared_render(messages)
    for _ in range(2):  # the second render takes the shared objects and their remembered tojson
        prepared = conv.prepare_messages(messages, "string")
        assert template.render(QWEN3, messages=prepared, add_generation_prompt=True) == expected


def test_equal_texts_share_one_object_and_bad_json_still_raises():
    shared = SharedJSON()
    a, b = shared.parse('{"x": [1, 2]}'), shared.parse('{"x": [1, 2]}')
    assert a is b and a == {"x": [1, 2]}
    assert shared.dumped(a) == json.dumps(a, ensure_ascii=False)
    assert shared.dumped({"y": "é"}) == '{"y": "é"}'  # an unshared object is dumped as is
    with pytest.raises(ValueError):
        shared.parse("{not json")


def test_no_template_can_change_a_shared_object():
    messages = _conversation(['{"path": "a.py"}'])
    for source in ("{{ messages[1].tool_calls[0].function.arguments.update({'path': 'evil'}) }}",
                   "{{ messages[1].tool_calls[0].function.arguments.pop('path') }}"):
        prepared = conv.prepare_messages(messages, "string")
        with pytest.raises(template.TemplateError):
            template.render(source, messages=prepared)
    again = conv.prepare_messages(messages, "string")
    assert again[1]["tool_calls"][0]["function"]["arguments"] == {"path": "a.py"}


def test_the_cache_keeps_within_its_character_budget():
    shared = SharedJSON(max_chars=16 * 100)
    kept = [shared.parse(json.dumps({"k": i, "pad": "x" * 40})) for i in range(200)]
    assert shared._chars <= 16 * 100
    assert len(shared._by_id) == len(shared._by_text) < 200
    # evicted objects are no longer remembered by id, still dumped correctly
    assert all(shared.dumped(o) == json.dumps(o, ensure_ascii=False) for o in kept)


any_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.integers() | st.floats() | st.booleans() | st.none(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(any_values)
def test_tojson_encoder_is_json_dumps(value):
    assert template.dumps(value) == json.dumps(value, ensure_ascii=False)


def test_tojson_encoder_refuses_what_json_dumps_refuses_with_its_message():
    for bad in ({"a": {1, 2}}, [object()], {("k",): 1}):
        with pytest.raises(TypeError) as ours:
            template.dumps(bad)
        with pytest.raises(TypeError) as theirs:
            json.dumps(bad, ensure_ascii=False)
        assert str(ours.value) == str(theirs.value)


def _look_alikes():
    """Values that ``==`` or JSON text would confuse, each in an object and an array."""
    scalars = [0, 0.0, -0.0, False, None, 1, 1.0, True, float("nan"), float("inf"), -float("inf"), "0", "", 2**70]
    return [{"a": v} for v in scalars] + [[v] for v in scalars] + [{0: 1}, {"0": 1}, {False: 1}, {None: 1}, (1, 2), [1, 2]]


@settings(max_examples=300, deadline=None)
@given(st.lists(any_values | st.sampled_from(_look_alikes()), min_size=1, max_size=8))
def test_tojson_remembered_by_value_is_json_dumps(values):
    """Each value, remembered or not, ``dumps`` as itself even after an equal-looking one."""
    for value in values + values:
        assert template.dumped_by_value(value) == json.dumps(value, ensure_ascii=False)


def test_tojson_remembered_by_value_still_refuses_what_json_dumps_refuses():
    for bad in ({"a": {1, 2}}, [object()], {"a": [1, 2]}, {"a": {1, 2}}):
        try:
            expected = json.dumps(bad, ensure_ascii=False)
        except TypeError:
            with pytest.raises(TypeError):
                template.dumped_by_value(bad)
        else:
            assert template.dumped_by_value(bad) == expected
