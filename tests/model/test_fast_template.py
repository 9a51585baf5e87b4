"""minijinja renders the verified templates exactly as Jinja2 does, or fails and leaves them to Jinja2.

The property: for any context, minijinja's output is Jinja2's output, or minijinja raises (and
``template.render`` answers with Jinja2: its output or its error). Never a different text, and
never a text where Jinja2 fails. Contexts are generated wider than requests can make them
(any JSON in any field, odd roles, null and missing fields, lone surrogates, huge ints).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MODELS
from tokenbridge.model import fast_template
from tokenbridge.model import template as tpl
from tokenbridge.render import conversation as conv


def _sources() -> dict[str, str]:
    """Every chat template in shared/models, by SHA-256."""
    found = {}
    for path in MODELS.glob("*/tokenizer_config.json"):
        source = json.loads(path.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(source, str):
            found[hashlib.sha256(source.encode()).hexdigest()] = source
    for path in (MODELS / "templates").glob("*.jinja"):
        source = path.read_text(encoding="utf-8")
        found[hashlib.sha256(source.encode()).hexdigest()] = source
    return found


SOURCES = _sources()
VERIFIED = sorted(h for h in fast_template.VERIFIED if h in SOURCES)


def fast(source: str):
    return fast_template.renderer(source, tpl._FILTERS, tpl._FUNCTIONS)


def outcome(render, context: dict) -> str:
    try:
        return render(context)
    except Exception as e:  # noqa: BLE001 - any failure is the outcome
        return f"<raised {type(e).__name__}>"


def test_every_verified_template_is_in_shared():
    assert set(fast_template.VERIFIED) <= set(SOURCES)


@pytest.mark.parametrize("digest", VERIFIED)
def test_the_recorded_content_format_is_the_one_jinja2s_ast_gives(digest):
    assert fast_template.VERIFIED[digest].content_format == conv.parsed_content_format(SOURCES[digest])


def test_an_unverified_template_is_left_to_jinja2():
    assert fast("{{ messages[0].content }}!") is None
    text = tpl.render("{{ messages[0].content }}!", messages=[{"content": None}])
    assert text == "None!"


text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "\n", "<think>\nr\n</think>\n\nx", "<tool_response>\nr\n</tool_response>", "</think>",
                     "a\x1c b\x85\u2028", "\ud800", " \t"]),
)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**200), max_value=2**200),
                      st.floats(allow_nan=True), text)
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                             st.dictionaries(text, inner, max_size=3)), max_leaves=6)
role = st.sampled_from(["system", "user", "assistant", "tool", "developer", "function", "other"])
call = st.one_of(
    st.fixed_dictionaries({"id": st.just("c1"), "type": st.just("function"),
                           "function": st.fixed_dictionaries({"name": st.one_of(text, json_leaf),
                                                              "arguments": st.one_of(text, json_value)})}),
    json_value,
)
message = st.fixed_dictionaries(
    {"role": st.one_of(role, json_leaf)},
    optional={"content": st.one_of(text, json_value), "tool_calls": st.one_of(st.lists(call, max_size=3), json_value),
              "reasoning_content": st.one_of(text, json_value), "name": json_leaf, "tool_call_id": json_leaf},
)
tool = st.one_of(
    st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
        {"name": text, "description": text, "parameters": json_value})}),
    json_value,
)
# Template kwargs a request may add, named as the template's own variables and functions.
shadowing = st.dictionaries(st.sampled_from(["namespace", "ns", "loop", "index", "content", "message", "tool",
                                             "tool_call", "reasoning_content", "range", "raise_exception", "tojson"]),
                            json_value, max_size=2)
context = st.builds(
    lambda base, extra: {**extra, **base},
    st.fixed_dictionaries(
        {"messages": st.lists(message, max_size=5), "tools": st.one_of(st.none(), st.lists(tool, max_size=3)),
         "add_generation_prompt": st.booleans()},
        optional={"enable_thinking": json_value, "documents": json_value, "bos_token": text, "eos_token": text},
    ),
    shadowing,
)


@pytest.mark.parametrize("digest", VERIFIED)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ctx=context)
def test_minijinja_output_is_jinja2s_or_it_fails(digest, ctx):
    source = SOURCES[digest]
    got = outcome(fast(source), ctx)
    if got.startswith("<raised"):
        return
    assert got == outcome(lambda c: tpl.render_jinja2(source, c), ctx)


@pytest.mark.parametrize("digest", VERIFIED)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(message, min_size=1, max_size=5), tools=st.one_of(st.none(), st.lists(tool, max_size=2)),
       thinking=st.one_of(st.nothing(), json_value))
def test_prepared_conversations_render_alike_through_both_engines(digest, messages, tools, thinking):
    """What requests can hand the template: messages as the render prepares them."""
    source = SOURCES[digest]
    try:
        prepared = conv.prepare_messages(messages, conv.detect_content_format(source))
    except Exception:  # noqa: BLE001 - a request the render refuses never reaches the template
        return
    ctx = {"messages": prepared, "tools": conv.tool_dicts(tools), "add_generation_prompt": True,
           "continue_final_message": False, "documents": None}
    if thinking is not None:
        ctx["enable_thinking"] = thinking
    want = outcome(lambda c: tpl.render_jinja2(source, c), ctx)
    assert outcome(lambda c: tpl.render(source, **c), ctx) == want
    got = outcome(fast(source), ctx)
    assert got == want or got.startswith("<raised")


def test_a_plain_chat_is_rendered_by_minijinja():
    """The point of it: the common case does not fall back."""
    source = SOURCES[VERIFIED[0]]
    ctx = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                        {"role": "assistant", "content": "<think>\nr\n</think>\n\nHello",
                         "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, 2.5, None]}}}]},
                        {"role": "tool", "content": "42"}, {"role": "user", "content": "Thanks"}],
           "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}],
           "add_generation_prompt": True, "enable_thinking": False}
    assert fast(source)(ctx) == tpl.render_jinja2(source, ctx)
