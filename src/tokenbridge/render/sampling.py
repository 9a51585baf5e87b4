"""vLLM ``SamplingParams`` as render serializes them.

vLLM encodes the struct with msgspec ``omit_defaults``, which compares by identity: ``None``,
booleans and small ints equal to the default vanish, floats and lists stay. ``_WireParams``
gives msgspec the same test, so the same key set comes out in the struct's field order and the
engine sees exactly what vLLM would send.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from tokenbridge.protocol.errors import bad_request

_PRESENT = object()  # the default of a float field: a value given is never it, so it is kept


class _WireParams(msgspec.Struct, omit_defaults=True, kw_only=True):
    """``SamplingParams``' fields in its declaration order, each with a default that msgspec's
    identity test (vLLM's own ``omit_defaults``) treats as vLLM's does: ``None``, booleans and
    CPython's cached small ints vanish when equal to the default; vLLM's float defaults never
    match a float given by identity, so a float field is dropped only when it is not given."""

    n: Any = 1
    presence_penalty: Any = _PRESENT
    frequency_penalty: Any = _PRESENT
    repetition_penalty: Any = _PRESENT
    temperature: Any = _PRESENT
    watermarking: Any = None
    top_p: Any = _PRESENT
    top_k: Any = 0
    min_p: Any = _PRESENT
    seed: Any = None
    stop: Any = None
    stop_token_ids: Any = None
    ignore_eos: Any = False
    max_tokens: Any = 16
    min_tokens: Any = 0
    logprobs: Any = None
    prompt_logprobs: Any = None
    logprob_token_ids: Any = None
    detokenize: Any = True
    skip_special_tokens: Any = True
    spaces_between_special_tokens: Any = True
    include_stop_str_in_output: Any = False
    output_kind: Any = 0
    skip_clone: Any = False
    structured_outputs: Any = None
    logit_bias: Any = None
    allowed_token_ids: Any = None
    extra_args: Any = None
    output_text_buffer_length: Any = 0
    bad_words: Any = None
    skip_reading_prefix_cache: Any = None
    thinking_token_budget: Any = None
    repetition_detection: Any = None


NEUTRAL = {
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
}


_resolved: dict[int, tuple[dict, dict]] = {}


def resolved_defaults(generation_defaults: dict) -> dict[str, Any]:
    """``fields``: each ``NEUTRAL`` field as ``(name, value when the request leaves it unset (the
    server default, else neutral), the field's type)``; and ``skip_special_tokens``' default.
    Made once per defaults dict (a model's, never changed after start-up)."""
    hit = _resolved.get(id(generation_defaults))
    if hit is not None and hit[0] is generation_defaults:
        return hit[1]
    fields = []
    for k, neutral in NEUTRAL.items():
        cast = type(neutral)
        fields.append((k, cast(generation_defaults.get(k, neutral)), cast))
    out = {"fields": tuple(fields), "skip_special_tokens": generation_defaults.get("skip_special_tokens", True)}
    if len(_resolved) >= 64:
        _resolved.clear()
    _resolved[id(generation_defaults)] = (generation_defaults, out)
    return out


_SAMPLING_EPS = 1e-5
_GREEDY_RESET = ("top_p", "top_k", "min_p")


_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode
_MAX_SERIALIZED = 1024
_serialized: dict[bytes, bytes] = {}  # MessagePack of values -> MessagePack of their wire form


def serialize(values: dict[str, Any]) -> dict[str, Any]:
    """The wire form of a ``SamplingParams`` built from ``values``, remembered: most requests
    of a deployment share a handful of sampling set-ups, and building the struct costs ~3x
    looking it up. The key is the MessagePack of ``values`` (which keeps int, float and bool
    apart, so equal keys are equal values); each answer is decoded afresh, so no two requests
    share a list or dict."""
    try:
        key = _pack(values)
    except (TypeError, ValueError, OverflowError):
        return _serialize(values)
    hit = _serialized.get(key)
    if hit is not None:
        return _unpack(hit)
    out = _serialize(values)
    if len(_serialized) >= _MAX_SERIALIZED:
        _serialized.clear()
    _serialized[key] = _pack(out)
    return out


_kept_plans: dict[tuple[int, int], tuple[dict, bytes]] = {}  # (id(values), max_tokens) -> values, wire


def serialize_kept(values: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """``serialize({**values, "max_tokens": max_tokens})`` for the values of a kept plan, which
    are never changed: remembered by their identity (the entry holds them, so the id is not
    reused meanwhile) and the count, without packing them for a key."""
    key = (id(values), max_tokens)
    hit = _kept_plans.get(key)
    if hit is not None and hit[0] is values:
        return _unpack(hit[1])
    out = serialize({**values, "max_tokens": max_tokens})
    if len(_kept_plans) >= _MAX_SERIALIZED:
        _kept_plans.clear()
    _kept_plans[key] = (values, _pack(out))
    return out


def _serialize(values: dict[str, Any]) -> dict[str, Any]:
    """``SamplingParams(**values)`` as vLLM sends it (its ``__post_init__`` applied).

    Greedy sampling resets top_p/top_k/min_p to the struct's own default objects, which
    omit-defaults then drops; prompt logprobs turn off prefix-cache reads.
    """
    values = {**values, "skip_reading_prefix_cache": values.get("prompt_logprobs") is not None}
    if 0 < values.get("temperature", 1.0) < _MIN_TEMPERATURE:  # raised before anything looks at it
        values["temperature"] = _MIN_TEMPERATURE
    verify(values)
    if values.get("seed") == -1:  # SamplingParams: -1 means no seed
        values["seed"] = None
    if values.get("temperature", 1.0) < _SAMPLING_EPS:
        for name in _GREEDY_RESET:
            values.pop(name, None)
    stop = values.get("stop")
    if stop and not values.get("include_stop_str_in_output"):  # held back to cut a stop string
        values["output_text_buffer_length"] = max(len(s) for s in stop) - 1
    return msgspec.to_builtins(_WireParams(**values))


# SamplingParams raises a positive temperature below this to it (smaller ones overflow).
_MIN_TEMPERATURE = 1e-2


def verify(values: dict[str, Any]) -> None:
    """The rest of ``SamplingParams.__post_init__``'s checks, on the final values."""
    temperature = values.get("temperature", 1.0)
    if not math.isfinite(temperature):
        raise bad_request(f"temperature must be a finite number, got {temperature}.", "temperature", temperature)
    if temperature > 2.0:
        raise bad_request(f"temperature must be in [0, 2], got {temperature}.", "temperature", temperature)
    max_tokens = values.get("max_tokens")
    if max_tokens is not None and max_tokens < 1:
        raise bad_request(f"max_tokens must be at least 1, got {max_tokens}.", "max_tokens", max_tokens)
    min_tokens = values.get("min_tokens", 0)
    if max_tokens is not None and min_tokens > max_tokens:
        raise bad_request(f"min_tokens must be less than or equal to max_tokens={max_tokens}, got {min_tokens}.")
    for name in ("logprobs", "prompt_logprobs"):
        v = values.get(name)
        if v is not None and v != -1 and v < 0:
            raise bad_request(f"{name} must be non-negative or -1, got {v}.", name, v)
    if any(not s for s in values.get("stop") or []):
        raise bad_request("stop cannot contain an empty string.")
    bad = values.get("bad_words") or []
    if any(not w for w in bad):
        raise bad_request(f"bad_words cannot contain an empty string. Got bad_words={bad}")
    so = values.get("structured_outputs")
    if isinstance(so, dict) and all(so.get(k) is None for k in _CONSTRAINTS):
        raise bad_request(
            "You must use one kind of structured outputs constraint but none are specified: " + repr(so)
        )
    n = values.get("n", 1)
    if temperature < _SAMPLING_EPS and n > 1:
        raise bad_request(f"n must be 1 when using greedy sampling, got {n}.")


_CONSTRAINTS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")

STRUCTURED_KEYS = (
    "json",
    "regex",
    "choice",
    "grammar",
    "json_object",
    "disable_any_whitespace",
    "disable_additional_properties",
    "whitespace_pattern",
    "structural_tag",
    "_backend",
    "_backend_was_auto",
)
_STRUCTURED_DEFAULTS = {
    "disable_any_whitespace": False,
    "disable_additional_properties": False,
    "_backend_was_auto": False,
}


_CONSTRAINT_KINDS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")


def logit_bias(bias: dict[str, float] | None) -> dict[int, float] | None:
    """``SamplingParams.from_optional``: keys become token ids, biases are clamped to ±100."""
    if bias is None:
        return None
    out: dict[int, float] = {}
    invalid = []
    for key, value in bias.items():
        try:
            out[int(key)] = min(100.0, max(-100.0, float(value)))
        except (ValueError, TypeError):
            invalid.append(key)
    if invalid:
        raise bad_request(
            f"logit_bias contains key(s) that cannot be converted to integer token IDs: {invalid!r}", "logit_bias"
        )
    return out


def extra_args(xargs: dict | None) -> dict | None:
    """``vllm_xargs`` as vLLM's schema hands them on: booleans as ints, empty as none."""
    if not xargs:
        return None
    return {k: _xarg(v) for k, v in xargs.items()}


def _xarg(v: Any) -> Any:
    if type(v) is bool:
        return int(v)
    if type(v) is list:
        return [int(e) if type(e) is bool else e for e in v]
    return v


def structured_outputs(response_format: dict | None, structured: dict | None) -> dict | None:
    """``structured_outputs`` with ``response_format`` applied over it, as vLLM merges them;
    more than one kind of constraint is vLLM's 400."""
    spec: dict[str, Any] = {k: v for k, v in (structured or {}).items() if k in STRUCTURED_KEYS}
    kind = (response_format or {}).get("type")
    if kind == "json_object":
        spec["json_object"] = True
    elif kind == "json_schema":
        js = response_format.get("json_schema") or {}
        schema = js.get("schema", js.get("json_schema"))
        if schema is None:  # StructuredOutputsParams(json=None) is built, and rejected, first
            raise bad_request(
                "You must use one kind of structured outputs constraint but none are specified: "
                + repr(structured_outputs_params({}))
            )
        spec["json"] = schema
    elif kind == "structural_tag":
        spec["structural_tag"] = _dumps(response_format)
    if not spec:
        return None
    params = structured_outputs_params(spec)
    if sum(params[k] is not None for k in _CONSTRAINT_KINDS) > 1:
        raise bad_request(
            "You can only use one kind of structured outputs constraint but multiple are specified: "
            + repr(params)
        )
    return params


def structured_outputs_params(spec: dict[str, Any]) -> dict[str, Any]:
    """A ``StructuredOutputsParams`` as serialized: every field, unset ones at their default."""
    return {k: spec.get(k, _STRUCTURED_DEFAULTS.get(k)) for k in STRUCTURED_KEYS}


def _dumps(v: Any) -> str:
    import json

    return json.dumps(v)


def check_ranges(req: Any) -> None:
    """vLLM's SamplingParams validation, raised with its messages."""
    if req.temperature is not None and req.temperature < 0:
        raise bad_request(f"temperature must be non-negative, got {req.temperature}.", "temperature", req.temperature)
    if req.top_p is not None and not 0 < req.top_p <= 1:
        raise bad_request(f"top_p must be in (0, 1], got {req.top_p}.", "top_p", req.top_p)
    if req.top_k is not None and (req.top_k < -1 or req.top_k == 0 and False):
        raise bad_request(f"top_k must be -1 (disable), or at least 1, got {req.top_k}.", "top_k", req.top_k)
    if req.min_p is not None and not 0 <= req.min_p <= 1:
        raise bad_request(f"min_p must be in [0, 1], got {req.min_p}.", "min_p", req.min_p)
    for name in ("presence_penalty", "frequency_penalty"):
        v = getattr(req, name)
        if v is not None and not -2.0 <= v <= 2.0:
            raise bad_request(f"{name} must be in [-2, 2], got {v}.", name, v)
    if req.repetition_penalty is not None and req.repetition_penalty <= 0:
        raise bad_request(
            f"repetition_penalty must be greater than zero, got {req.repetition_penalty}.",
            "repetition_penalty",
            req.repetition_penalty,
        )
    if req.n is not None and req.n < 1:
        raise bad_request(f"n must be at least 1, got {req.n}.", "n", req.n)
    if req.min_tokens is not None and req.min_tokens < 0:
        raise bad_request(f"min_tokens must be greater than or equal to 0, got {req.min_tokens}.", "min_tokens")
