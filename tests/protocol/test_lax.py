"""Lax decoding: an engine output decoded straight into structs converts as its dicts do."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.protocol import lax
from tokenbridge.protocol.engine import DerenderChatRequest, GenerateResponse
from tokenbridge.protocol.errors import ApiError

_scalars = st.one_of(
    st.integers(-3, 200_000), st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(), st.none(), st.sampled_from(["7", "-1.5", "true", "stop", "x"]),
)
_top = st.fixed_dictionaries({"token_id": _scalars, "logprob": _scalars}, optional={"rank": _scalars})
_entry = st.fixed_dictionaries(
    {"token_id": _scalars, "logprob": _scalars}, optional={"rank": _scalars, "top_logprobs": st.lists(_top, max_size=3)}
)
_choice = st.fixed_dictionaries(
    {"index": _scalars},
    optional={
        "token_ids": st.one_of(st.lists(_scalars, max_size=6), st.none()),
        "finish_reason": _scalars,
        "stop_reason": _scalars,
        "logprobs": st.one_of(st.none(), st.fixed_dictionaries({"content": st.lists(_entry, max_size=4)})),
    },
)
_response = st.fixed_dictionaries(
    {"choices": st.lists(_choice, max_size=2)}, optional={"request_id": st.sampled_from(["r1", "cmpl-9"])}
)
_body = st.fixed_dictionaries(
    {"generate_response": st.one_of(_response, _scalars)},
    optional={"stream": st.sampled_from([False, "false", 0, None]), "model": st.sampled_from(["m", 3])},
)


def _outcome(obj):
    try:
        req = lax.convert(obj, DerenderChatRequest)
    except ApiError as e:
        return "error", msgspec.json.encode(e.envelope())
    resp = req.generate_response
    if resp is not None:
        resp.request_id = "fixed"  # a missing id is made up at random
    return "ok", msgspec.json.encode(req)


@settings(max_examples=300, deadline=None)
@given(_body)
def test_a_body_converts_alike_with_its_engine_output_decoded_as_structs(doc):
    body = json.dumps(doc).encode()
    assert _outcome(_view_or_whole(body)) == _outcome(lax.parse_json(body))


@pytest.mark.parametrize("body", [
    b'{"generate_response": {"choices": [{"index": 0, "logprobs": {"content": [{"token_id": 1, "logprob": NaN}]}}]}}',
    b'[1, 2]',
    pytest.param(b"{\"generate_response\": " * 600 + b"1" + b"}" * 600, id="nested 600 deep"),
    b'{"generate_response": {"choices": []}, "generate_response": {"choices": [{"index": "2"}]}}',
])
def test_bodies_only_json_loads_reads_or_odd_ones_parse_as_before(body):
    try:
        expected = lax.parse_json(body)
    except ApiError as e:
        with pytest.raises(ApiError) as got:
            _view_or_whole(body)
        assert got.value.envelope() == e.envelope()
        return
    got = _view_or_whole(body)
    if isinstance(expected, dict):
        assert _outcome(got) == _outcome(expected)
    else:
        assert got == expected


def test_a_well_typed_engine_output_arrives_as_a_struct_and_the_rest_as_json_gives_it():
    body = (b'{"generate_response": {"request_id": "r", "choices": [{"index": 0, "token_ids": [5, 6]}]}, "x": [1], '
            b'"chat_request": {"messages": []}, "prompt_token_ids": [1, 2], "stream": false}')
    obj = lax.decode_view(body, DerenderChatRequest, "generate_response", GenerateResponse, ("chat_request",))
    assert isinstance(obj["generate_response"], GenerateResponse)
    assert bytes(obj["chat_request"]) == b'{"messages": []}'  # left undecoded, as asked
    assert obj["prompt_token_ids"] == [1, 2] and obj["stream"] is False
    assert "x" not in obj  # not a field: ``convert`` would ignore it


def test_a_null_engine_output_is_read_in_the_one_pass_too():
    body = b'{"generate_response": null, "model": "m"}'
    assert lax.decode_view(body, DerenderChatRequest, "generate_response", GenerateResponse) == {
        "generate_response": None, "model": "m"}


def _view_or_whole(body: bytes):
    """What derender reads: the one-pass view, or the whole body parsed when the view fails."""
    obj = lax.decode_view(body, DerenderChatRequest, "generate_response", GenerateResponse)
    return lax.parse_json(body) if obj is None else obj
