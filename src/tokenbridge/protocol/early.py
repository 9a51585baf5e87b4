"""vLLM's ``mode="before"`` model validators and raising field validators, on the raw body.

pydantic runs a model's ``before`` validators last-defined first, on the JSON as parsed, and
their errors escape validation: ``VLLMValidationError`` and ``TypeError`` become 400
``BadRequestError``. Where vLLM crashes instead (``AttributeError`` from ``.get`` on a non-dict,
a ``KeyError``: its 500), we answer the 400 its schema would have given had the check not crashed.
Field validators that raise ``VLLMValidationError`` (``thinking_token_budget``, the
``__post_init__`` of ``structured_outputs`` / ``repetition_detection``) abort field validation
too, so they win over ordinary field errors; they run here, ahead of the msgspec conversion.
The checks also normalize a few values the way vLLM's validators do.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from tokenbridge.protocol.errors import ApiError, bad_request, validation_error
from tokenbridge.protocol.lax import _to_bool, _to_int

_CACHE_SALT_FORBIDDEN = frozenset("@/\\\x00")
_NOT_AN_OBJECT = "Input should be a valid dictionary or object to extract fields from"
_TOOL_CHOICE_USAGE = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`'


def type_error(message: str) -> ApiError:
    """A ``TypeError`` escaping a vLLM validator: a 400 ``BadRequestError`` without param."""
    return ApiError(message, 400, "BadRequestError")


# ---------------------------------------------------------------- shared before-validators


def check_cache_salt(data: dict) -> None:
    salt = data.get("cache_salt")
    if salt is None:
        return
    if not isinstance(salt, str) or not salt:
        raise bad_request("Parameter 'cache_salt' must be a non-empty string if provided.", "cache_salt")
    if len(salt) > 128 or any(c in _CACHE_SALT_FORBIDDEN for c in salt):
        raise bad_request(
            "Parameter 'cache_salt' must be at most 128 characters and must not contain "
            "'@', '/', '\\\\', or NUL.",
            "cache_salt",
        )


def check_response_format(data: dict) -> None:
    rf = data.get("response_format")
    if isinstance(rf, dict) and rf.get("type") == "json_schema" and not isinstance(rf.get("json_schema"), (dict, type(None))):
        raise validation_error("body.response_format.json_schema", "model_attributes_type", _NOT_AN_OBJECT)
    if isinstance(rf, dict) and rf.get("type") == "json_schema" and rf.get("json_schema") is None:
        raise bad_request(
            "When response_format type is 'json_schema', the 'json_schema' field must be provided.",
            "response_format",
        )
    if isinstance(rf, dict) and rf.get("type") == "structural_tag" and not _is_structural_tag(rf):
        raise bad_request("Invalid response_format structural_tag specification.", "response_format")


def _is_structural_tag(rf: dict) -> bool:
    """The shape of one of vLLM's structural-tag formats: ``format`` (any value), or the legacy
    ``structures`` of ``{begin, schema, end}`` with ``triggers``. (What the grammar engine
    then rejects inside a well-shaped tag is not checked here.)"""
    if "format" in rf:
        return True
    structures, triggers = rf.get("structures"), rf.get("triggers")
    return (
        isinstance(structures, list)
        and isinstance(triggers, list)
        and all(isinstance(t, str) for t in triggers)
        and all(
            isinstance(st, dict)
            and isinstance(st.get("begin"), str)
            and isinstance(st.get("end"), str)
            and isinstance(st.get("schema"), (dict, type(None)))
            for st in structures
        )
    )


def check_stream_options(data: dict) -> None:
    if data.get("stream_options") and not data.get("stream"):
        raise bad_request("Stream options can only be defined when `stream=True`.", "stream_options")


def check_structured_outputs_count(data: dict, chat: bool) -> None:
    so = data.get("structured_outputs")
    if so is None:
        return
    if not isinstance(so, dict):
        raise validation_error("body.structured_outputs", "model_attributes_type", _NOT_AN_OBJECT)
    count = sum(so.get(k) is not None for k in ("json", "regex", "choice"))
    if count > 1:
        raise bad_request(
            "You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice').",
            None if chat else "structured_outputs",
        )
    if chat and count > 0 and not _in(data.get("tool_choice", "none"), ("none", "auto", "required")):
        raise bad_request("You can only either use constraints for structured outputs or tools, not both.")


def _in(value: Any, options: tuple) -> bool:
    """``value in options`` as Python evaluates it (by equality), for any JSON value."""
    return any(value == o for o in options)


def _prompt_logprobs(data: dict, names: tuple[str, str]) -> None:
    for name in names:
        v = data.get(name)
        if v is not None and not isinstance(v, (int, float)):
            raise bad_request(f"`{name}` must be an integer.", name, v)
    p = data.get("prompt_logprobs")
    if p is not None:
        if data.get("stream") and (p > 0 or p == -1):
            raise bad_request("`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs")
        if p < 0 and p != -1:
            raise bad_request("`prompt_logprobs` must be a positive value or -1.", "prompt_logprobs", p)


# ---------------------------------------------------------------- raising field validators


def check_thinking_token_budget(data: dict) -> None:
    """``validate_thinking_token_budget``: a non-negative int, or -1 (stored as None)."""
    if "thinking_token_budget" not in data:
        return
    v = data["thinking_token_budget"]
    if v is None:
        return
    if type(v) is not int or (v < 0 and v != -1):
        raise bad_request(
            "`thinking_token_budget` must be a non-negative integer or -1 for unlimited.",
            "thinking_token_budget",
            v,
        )
    if v == -1:
        data["thinking_token_budget"] = None


def _strict_field(value: Any, kinds: tuple, loc: str, err: str, msg: str, nullable: bool = True) -> None:
    if (value is None and nullable) or isinstance(value, kinds) and type(value) is not bool:
        return
    raise validation_error(loc, err, msg)


_STR = ("string_type", "Input should be a valid string")


def check_structured_outputs(data: dict) -> None:
    """The ``StructuredOutputsParams`` dataclass: field types, then exactly one constraint."""
    so = data.get("structured_outputs")
    if not isinstance(so, dict):
        return
    loc = "body.structured_outputs"
    out = dict(so)
    for k in ("regex", "grammar", "whitespace_pattern", "structural_tag"):
        if k in so:
            _strict_field(so[k], (str,), f"{loc}.{k}", *_STR)
    if "json" in so:
        _strict_field(so["json"], (str, dict), f"{loc}.json", *_STR)
    choice = so.get("choice")
    if choice is not None:
        if not isinstance(choice, list):
            raise validation_error(f"{loc}.choice", "list_type", "Input should be a valid list")
        for i, c in enumerate(choice):
            _strict_field(c, (str,), f"{loc}.choice.{i}", *_STR, nullable=False)
    for k in ("json_object", "disable_any_whitespace", "disable_additional_properties"):
        if k in so:
            if so[k] is None and k != "json_object":
                raise validation_error(f"{loc}.{k}", "bool_type", "Input should be a valid boolean")
            out[k] = _to_bool(so[k], f"{loc}.{k}")
    keys = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")
    count = sum(out.get(k) is not None for k in keys)
    if count > 1:
        raise bad_request("You can only use one kind of structured outputs constraint but multiple are specified")
    if count < 1:
        raise bad_request("You must use one kind of structured outputs constraint but none are specified")
    data["structured_outputs"] = out


def check_repetition_detection(data: dict) -> None:
    """The ``RepetitionDetectionParams`` dataclass, materialized with its defaults."""
    rd = data.get("repetition_detection")
    if rd is None:
        return
    loc = "body.repetition_detection"
    if not isinstance(rd, dict):
        raise validation_error(
            loc, "dataclass_type", "Input should be a dictionary or an instance of RepetitionDetectionParams"
        )
    vals = {}
    for k in ("max_pattern_size", "min_pattern_size", "min_count"):
        v = _to_int(rd.get(k, 0), f"{loc}.{k}")
        if type(v) is not int:
            raise validation_error(f"{loc}.{k}", "int_type", "Input should be a valid integer")
        vals[k] = v
    if vals["max_pattern_size"] < 0 or vals["min_pattern_size"] < 0 or vals["min_pattern_size"] > vals["max_pattern_size"]:
        raise bad_request(
            "max_pattern_size, min_pattern_size must be >=0, with min_pattern_size <= max_pattern_size. "
            "Set both to 0 to disable repetitive pattern detection."
        )
    if vals["max_pattern_size"] > 0 and vals["min_count"] < 2:
        raise bad_request(
            "min_count must be >= 2 to detect repetitive patterns in engine output. If you do not wish "
            "to detect repetitive patterns, set max_pattern_size to 0."
        )
    data["repetition_detection"] = vals


_INT64 = 2**63
_RESPONSE_FORMAT_TYPES = ("text", "json_object", "json_schema", "structural_tag")


def check_stop_count(stop: Any, loc: str) -> None:
    """At most ``VLLM_MAX_STOP_STRINGS`` stop strings."""
    if not isinstance(stop, list):
        return
    limit = int(os.environ.get("VLLM_MAX_STOP_STRINGS", "4"))
    if len(stop) > limit:
        raise validation_error(loc, "too_long", f"List should have at most {limit} items after validation, not {len(stop)}")


_XARG_SCALARS = (str, int, float)  # bool is an int, as pydantic's smart union takes it


def check_vllm_xargs(data: dict) -> None:
    """``vllm_xargs``: each value a string, number, or list of those (vLLM's schema)."""
    xargs = data.get("vllm_xargs")
    if not isinstance(xargs, dict):
        return
    for key, v in xargs.items():
        if not (isinstance(v, _XARG_SCALARS) or isinstance(v, list) and all(isinstance(e, _XARG_SCALARS) for e in v)):
            raise validation_error(f"body.vllm_xargs.{key}", "string_type", "Input should be a valid string")


def check_sampling_fields(data: dict) -> None:
    """Sampling-field constraints of vLLM's request schemas that the msgspec types leave open:
    at most ``VLLM_MAX_STOP_STRINGS`` stop strings, an int64 ``seed``, ``truncate_prompt_tokens``
    of at least -1, a known ``response_format`` type and a named ``json_schema``."""
    check_stop_count(data.get("stop"), "body.stop.list[str]")
    check_vllm_xargs(data)
    seed = data.get("seed")
    if type(seed) is int and not -_INT64 <= seed < _INT64:
        kind, bound = ("less_than_equal", _INT64 - 1) if seed > 0 else ("greater_than_equal", -_INT64)
        raise validation_error("body.seed", kind, f"Input should be {kind.replace('_', ' ')} to {bound}")
    truncate = data.get("truncate_prompt_tokens")
    whole = type(truncate) is int or type(truncate) is float and truncate.is_integer()
    if whole and not -1 <= truncate < _INT64:
        kind, bound = ("greater_than_equal", -1) if truncate < -1 else ("less_than_equal", _INT64 - 1)
        raise validation_error("body.truncate_prompt_tokens", kind, f"Input should be {kind.replace('_', ' ')} to {bound}")
    rf = data.get("response_format")
    if isinstance(rf, dict) and rf.get("type") not in _RESPONSE_FORMAT_TYPES:
        raise validation_error("body.response_format.ResponseFormat.type", "literal_error",
                               "Input should be 'text', 'json_object' or 'json_schema'")
    js = rf.get("json_schema") if isinstance(rf, dict) and rf.get("type") == "json_schema" else None
    if isinstance(js, dict) and not isinstance(js.get("name"), str):
        missing = "name" not in js
        raise validation_error("body.response_format.json_schema.name", "missing" if missing else "string_type",
                               "Field required" if missing else "Input should be a valid string")


def check_tool_definitions(data: dict) -> None:
    """Chat ``tools``: each a ``function`` tool whose function has a string ``name`` and, when
    given, an object of ``parameters``."""
    tools = data.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else ()):
        if not isinstance(tool, dict):
            continue
        if tool.get("type", "function") != "function":
            raise validation_error(f"body.tools.{i}.type", "literal_error", "Input should be 'function'")
        fn = tool.get("function")
        if not isinstance(fn, dict):
            raise validation_error(f"body.tools.{i}.function", "missing" if fn is None else "model_type",
                                   "Field required" if fn is None else "Input should be a valid dictionary")
        if not isinstance(fn.get("name"), str):
            raise validation_error(f"body.tools.{i}.function.name", "missing" if "name" not in fn else "string_type",
                                   "Field required" if "name" not in fn else "Input should be a valid string")
        if fn.get("parameters") is not None and not isinstance(fn["parameters"], dict):
            raise validation_error(f"body.tools.{i}.function.parameters", "dict_type", "Input should be a valid dictionary")


def check_fields(data: dict, field_check: Callable[[dict], None] | None = None) -> None:
    """Field validation: ``field_check``'s pydantic errors lose to a raising field validator."""
    try:
        if field_check is not None:
            field_check(data)
    except ApiError as e:
        if e.type != "Bad Request":
            raise
        _raising_fields(data)
        raise
    _raising_fields(data)


def _raising_fields(data: dict) -> None:
    check_thinking_token_budget(data)
    check_structured_outputs(data)
    check_repetition_detection(data)


# ---------------------------------------------------------------- chat completions


def check_chat_logprobs(data: dict) -> None:
    if data.get("logprob_token_ids") and data.get("use_beam_search"):
        raise bad_request("`logprob_token_ids` is not supported with beam search.", "logprob_token_ids")
    if data.get("logprob_token_ids") and not data.get("logprobs"):
        raise bad_request("when using `logprob_token_ids`, `logprobs` must be set to true.", "logprob_token_ids")
    _prompt_logprobs(data, ("prompt_logprobs", "top_logprobs"))
    top = data.get("top_logprobs")
    if top is not None:
        if top < 0 and top != -1:
            raise bad_request("`top_logprobs` must be a positive value or -1.", "top_logprobs", top)
        if (top == -1 or top > 0) and not data.get("logprobs"):
            raise bad_request("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs")


def check_tool_usage(data: dict) -> None:
    tools = data.get("tools")
    if isinstance(tools, list) and not tools:
        raise bad_request(
            "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.",
            "tools",
        )
    if "tool_choice" not in data and tools:
        data["tool_choice"] = "auto"
    choice = data.get("tool_choice")
    if choice is None or choice == "none":
        return
    if tools is None:
        raise bad_request("When using `tool_choice`, `tools` must be set.", "tool_choice")
    if not isinstance(choice, dict):
        if _in(choice, ("auto", "required")):
            return
        raise bad_request(
            f"Invalid value for `tool_choice`: {_py_str(choice)}! "
            'Only named tools, "none", "auto" or "required" are supported.',
            "tool_choice",
        )
    function = choice.get("function")
    if not isinstance(function, dict):
        raise bad_request(
            f"Invalid value for `function`: `{_py_str(function)}` in `tool_choice`! {_TOOL_CHOICE_USAGE}",
            "tool_choice.function",
        )
    if "name" not in function:
        raise bad_request(
            f"Expected field `name` in `function` in `tool_choice`! {_TOOL_CHOICE_USAGE}",
            "tool_choice.function.name",
        )
    name = function["name"]
    if not isinstance(name, str) or not name:
        raise bad_request(
            f"Invalid `name` in `function`: `{_py_str(name)}` in `tool_choice`! {_TOOL_CHOICE_USAGE}",
            "tool_choice.function.name",
        )
    if not any(_tool_name(t, i) == name for i, t in enumerate(_iterate(tools))):
        raise bad_request("The tool specified in `tool_choice` does not match any of the specified `tools`", "tool_choice")


def _py_str(v: Any) -> str:
    return str(v)


def _iterate(value: Any) -> Any:
    """``iter(value)`` with Python's TypeError turned into vLLM's 400."""
    if isinstance(value, (list, str, dict)):
        return value
    raise type_error(f"'{type(value).__name__}' object is not iterable")


def _tool_name(tool: Any, index: int) -> Any:
    """``tool["function"]["name"]`` with Python's exceptions mapped as vLLM's handler does; a
    missing key (vLLM's 500) is the schema's missing-field 400."""
    node = tool
    loc = f"body.tools.{index}"
    for key in ("function", "name"):
        loc += f".{key}"
        if isinstance(node, dict):
            if key not in node:
                raise validation_error(loc, "missing", "Field required")
            node = node[key]
        elif isinstance(node, (str, list)):
            raise type_error(f"{type(node).__name__} indices must be integers or slices, not str")
        else:
            raise type_error(f"'{type(node).__name__}' object is not subscriptable")
    return node


def check_generation_prompt(data: dict) -> None:
    if data.get("continue_final_message") and data.get("add_generation_prompt"):
        raise bad_request("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")


def normalize_messages(data: dict) -> None:
    """``_normalize_messages_before``: ``tool_calls`` iterables become lists."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        return
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        calls = msg.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            msg["tool_calls"] = list(_iterate(calls))
        reasoning = msg.pop("reasoning_content", None)
        if reasoning is not None and msg.get("reasoning") is None:
            msg["reasoning"] = reasoning


def check_chat(data: Any, field_check: Callable[[dict], None] | None = None) -> Any:
    """``ChatCompletionRequest``'s before-validators (in pydantic's order), then its fields."""
    if not isinstance(data, dict):
        return data
    _iterate(data.get("messages", []))  # check_system_message_content_type iterates them
    check_generation_prompt(data)
    check_tool_usage(data)
    check_structured_outputs_count(data, chat=True)
    check_chat_logprobs(data)
    check_stream_options(data)
    check_response_format(data)
    normalize_messages(data)
    check_cache_salt(data)
    check_fields(data, field_check)
    return data


# ---------------------------------------------------------------- completions


def check_completion_logprobs(data: dict) -> None:
    if data.get("logprob_token_ids") and data.get("use_beam_search"):
        raise bad_request("`logprob_token_ids` is not supported with beam search.", "logprob_token_ids")
    if data.get("use_beam_search") and data.get("echo") and data.get("logprobs") is not None:
        raise bad_request(
            "`echo` with `logprobs` is not supported with beam search because beam search does not "
            "compute prompt logprobs.",
            "echo",
        )
    if data.get("logprob_token_ids") and data.get("echo") and data.get("max_tokens") == 0:
        raise bad_request(
            "`logprob_token_ids` is not supported when `echo=True` and `max_tokens=0` because no output "
            "tokens are generated.",
            "logprob_token_ids",
        )
    if data.get("logprob_token_ids") and data.get("logprobs") is None:
        raise bad_request("when using `logprob_token_ids`, `logprobs` must be set.", "logprob_token_ids")
    _prompt_logprobs(data, ("prompt_logprobs", "logprobs"))
    lp = data.get("logprobs")
    if lp is not None and lp < 0 and lp != -1:
        raise bad_request("`logprobs` must be a positive value or -1.", "logprobs", lp)


def check_prompt_and_embeds(data: dict) -> None:
    prompt, embeds = data.get("prompt"), data.get("prompt_embeds")
    if (prompt is None or prompt == "") and (embeds is None or embeds == []):
        raise bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt")


def check_completion(data: Any, field_check: Callable[[dict], None] | None = None) -> Any:
    """``CompletionRequest``'s before-validators (in pydantic's order), then raising fields."""
    if not isinstance(data, dict):
        return data
    max_prompts = int(os.environ.get("VLLM_MAX_COMPLETION_PROMPTS", "1024"))
    prompt = data.get("prompt")
    if isinstance(prompt, list) and len(prompt) > max_prompts and not isinstance(prompt[0], int):
        raise bad_request(
            f"prompt list length {len(prompt)} exceeds the maximum allowed count of {max_prompts}. To "
            "increase this limit, set the VLLM_MAX_COMPLETION_PROMPTS environment variable.",
            "prompt",
        )
    embeds = data.get("prompt_embeds")
    if isinstance(embeds, list) and len(embeds) > max_prompts:
        raise bad_request(
            f"prompt_embeds list length {len(embeds)} exceeds the maximum allowed count of {max_prompts}. "
            "To increase this limit, set the VLLM_MAX_COMPLETION_PROMPTS environment variable.",
            "prompt_embeds",
        )
    check_prompt_and_embeds(data)
    check_stream_options(data)
    check_completion_logprobs(data)
    check_structured_outputs_count(data, chat=False)
    check_response_format(data)
    if data.get("max_tokens") is None:
        data["max_tokens"] = 16
    check_cache_salt(data)
    check_fields(data, field_check)
    return data
