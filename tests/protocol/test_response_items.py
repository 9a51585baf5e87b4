"""The Responses input-item union: which items vLLM 0.33 accepts, without a server.

The fixture holds items (well-formed ones of every kind the render reads, and mutations of
them: a key dropped, a value of another type, a stray key) with vLLM's verdict, recorded by
validating ``{"model": "m", "input": [item]}`` with vLLM's own ``ResponsesRequest``.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, strategies as st

from tokenbridge.protocol.response_items import is_output_message, prepare, valid_item

CASES = json.loads((Path(__file__).parent / "data" / "response_items_vllm.json").read_text())["cases"]
ACCEPTED = [item for item, ok in CASES if ok]


def test_items_are_accepted_exactly_when_vllm_accepts_them():
    wrong = [(item, ok) for item, ok in CASES if valid_item(prepare(item)) != ok]
    assert not wrong, wrong[:5]


def test_fixture_covers_both_verdicts_for_every_kind_the_render_reads():
    kinds = {"message", "function_call", "function_call_output", "reasoning", "custom_tool_call"}
    for ok in (True, False):
        seen = {item.get("type", "message") for item, verdict in CASES if verdict is ok and isinstance(item.get("type", ""), str)}
        assert kinds <= seen, (ok, kinds - seen)


@given(st.sampled_from(ACCEPTED), st.dictionaries(st.text(min_size=1).map(lambda k: "x_" + k), st.none() | st.integers() | st.text()))
def test_unknown_keys_never_change_acceptance(item, extra):
    assert valid_item(prepare({**item, **extra}))


def test_assistant_output_text_without_type_is_no_member_of_the_union():
    item = {"role": "assistant", "content": [{"type": "output_text", "text": "Noted."}]}
    assert not valid_item(prepare(item))
    typed = prepare({**item, "type": "message"})
    assert valid_item(typed) and is_output_message(typed)
    assert typed["content"][0]["annotations"] == [] and typed["status"] == "completed"


def test_reasoning_without_id_is_given_one_before_validation():
    item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}]}
    assert valid_item(prepare(item)) and "id" not in item
    assert not valid_item(prepare({"type": "reasoning", "content": [{"type": "reasoning_text", "text": "t"}]}))


def test_any_dict_with_a_string_id_is_an_item_reference():
    assert valid_item(prepare({"id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}))
    assert not valid_item(prepare({"id": 1, "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}))


def test_input_images_default_to_auto_detail():
    item = prepare({"role": "user", "content": [{"type": "input_image", "image_url": "https://example.com/a.png"}]})
    assert item["content"][0]["detail"] == "auto" and valid_item(item)
