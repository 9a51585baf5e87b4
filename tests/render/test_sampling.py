"""``sampling.serialize`` drops exactly what vLLM's msgspec ``omit_defaults`` (an identity test)
drops from its ``SamplingParams``: ``None``, booleans and small ints equal to the default;
a float or a list that is given always stays, in the struct's field order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.render import sampling

# (field, vLLM's default) in SamplingParams' declaration order.
VLLM_DEFAULTS = (
    ("n", 1), ("presence_penalty", 0.0), ("frequency_penalty", 0.0), ("repetition_penalty", 1.0),
    ("temperature", 1.0), ("top_p", 1.0), ("top_k", 0), ("min_p", 0.0), ("seed", None), ("stop", None),
    ("stop_token_ids", None), ("ignore_eos", False), ("max_tokens", 16), ("min_tokens", 0), ("logprobs", None),
    ("prompt_logprobs", None), ("logprob_token_ids", None), ("detokenize", True), ("skip_special_tokens", True),
    ("spaces_between_special_tokens", True), ("include_stop_str_in_output", False), ("output_kind", 0),
    ("skip_clone", False), ("structured_outputs", None), ("logit_bias", None), ("allowed_token_ids", None),
    ("extra_args", None), ("output_text_buffer_length", 0), ("bad_words", None),
    ("skip_reading_prefix_cache", None), ("thinking_token_budget", None), ("repetition_detection", None),
)
CHECKED = {"temperature", "max_tokens", "min_tokens", "logprobs", "prompt_logprobs", "stop", "bad_words",
           "structured_outputs", "n", "seed"}  # verify() reads these: kept valid below


def omitted(value, default) -> bool:
    """msgspec's test on vLLM's objects: identity. A given float is never vLLM's default object;
    ints in CPython's small-int cache are."""
    if isinstance(default, float):
        return False
    if isinstance(default, bool) or default is None:
        return value is default
    return type(value) is int and value == default


any_value = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.integers(2**40, 2**41), st.floats(-1e6, 1e6),
                      st.lists(st.integers(0, 9), max_size=2), st.text(max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from([n for n, _ in VLLM_DEFAULTS if n not in CHECKED]), any_value),
       st.sampled_from([0.0, 0.7, 1.0]), st.sampled_from([None, 1, 16, 300]), st.sampled_from([None, 0, -1, 7]))
def test_serialize_omits_what_vllm_omits(values, temperature, max_tokens, seed):
    values = {**values, "temperature": temperature, "max_tokens": max_tokens, "seed": seed, "n": 1,
              "prompt_logprobs": None}
    out = sampling.serialize(values)
    derived = {**values, "skip_reading_prefix_cache": False, "seed": None if seed == -1 else seed}
    if temperature < 1e-5:
        for name in ("top_p", "top_k", "min_p"):
            derived.pop(name, None)
    want = {name: derived[name] for name, default in VLLM_DEFAULTS
            if name in derived and not omitted(derived[name], default)}
    assert list(out.items()) == list(want.items())
    again = sampling.serialize(dict(values))  # remembered: the same answer, in objects of its own
    assert list(again.items()) == list(out.items())
    assert all(again[k] is not v for k, v in out.items() if isinstance(v, (list, dict)))
