"""The Responses ``input`` item union, as vLLM 0.33's pydantic validates it.

vLLM types each input item as the OpenAI SDK's ``ResponseInputItemParam | ResponseOutputItem``:
about thirty TypedDicts (extra keys kept) and thirty output models, tried as a pydantic smart
union. An item that no member accepts fails the whole request with a 400 ``Bad Request`` whose
first error is ``body.input`` (the ``str`` branch of ``str | list``). Before that, vLLM's
``input_item_parsing`` gives a ``reasoning`` item an id and an assistant ``message`` with list
content an id, a status and output-text annotations. Nested shapes the render never reads
(actions, tools, operations, annotations) are checked by kind only; ``Iterable`` fields are
lazily validated by pydantic, so only their being iterable is checked.
"""

from __future__ import annotations

from typing import Any

Spec = Any  # a spec is one of the tuples built below, or a kind name (str)

_TRUE_FALSE = {"0", "1", "off", "on", "f", "t", "false", "true", "n", "y", "no", "yes"}


def lit(*values: str) -> Spec:
    return ("lit", values)


def opt(spec: Spec) -> Spec:
    return ("opt", spec)


def list_of(spec: Spec) -> Spec:
    return ("list", spec)


def one_of(*specs: Spec) -> Spec:
    return ("union", specs)


def td(required: dict[str, Spec], optional: dict[str, Spec] | None = None) -> Spec:
    return ("td", required, optional or {})


def accepts(spec: Spec, value: Any) -> bool:
    """Whether pydantic (lax mode, JSON input) accepts ``value`` for ``spec``."""
    if isinstance(spec, str):
        return _KINDS[spec](value)
    tag = spec[0]
    if tag == "lit":
        return isinstance(value, str) and value in spec[1]
    if tag == "opt":
        return value is None or accepts(spec[1], value)
    if tag == "list":
        return isinstance(value, list) and all(accepts(spec[1], v) for v in value)
    if tag == "union":
        return any(accepts(s, value) for s in spec[1])
    _, required, optional = spec
    if not isinstance(value, dict):
        return False
    if any(k not in value or not accepts(s, value[k]) for k, s in required.items()):
        return False
    return all(accepts(s, value[k]) for k, s in optional.items() if k in value)


def _is_int(v: Any) -> bool:
    if isinstance(v, float):
        return v.is_integer()
    if isinstance(v, str):
        try:
            int(v.strip())
        except ValueError:
            return False
        return True
    return isinstance(v, int)


def _is_bool(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in _TRUE_FALSE
    return isinstance(v, (bool, int, float)) and v in (0, 1)


_KINDS = {
    "str": lambda v: isinstance(v, str),
    "int": _is_int,
    "bool": _is_bool,
    "any": lambda v: True,
    "dict": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "iter": lambda v: isinstance(v, (list, str, dict)),  # a lazily validated Iterable
}

STATUS = lit("in_progress", "completed", "incomplete")
_OSTR = opt("str")
_CALLER = opt("dict")
_BREAKPOINT = td({"mode": lit("explicit")}, {"ttl": lit("30m", "12h")})

INPUT_TEXT = td({"text": "str", "type": lit("input_text")}, {"prompt_cache_breakpoint": _BREAKPOINT})
INPUT_IMAGE = td(
    {"detail": lit("low", "high", "auto", "original"), "type": lit("input_image")},
    {"file_id": _OSTR, "image_url": _OSTR, "prompt_cache_breakpoint": _BREAKPOINT},
)
INPUT_FILE = td(
    {"type": lit("input_file")},
    {
        "detail": lit("auto", "low", "high"), "file_data": "str", "file_id": _OSTR, "file_url": "str",
        "filename": "str", "prompt_cache_breakpoint": _BREAKPOINT,
    },
)
INPUT_PART = one_of(INPUT_TEXT, INPUT_IMAGE, INPUT_FILE)
# The parts a tool output list may hold (image detail optional here).
OUTPUT_PART = one_of(
    INPUT_TEXT,
    td({"type": lit("input_image")}, {"detail": opt(lit("low", "high", "auto", "original")), "file_id": _OSTR, "image_url": _OSTR}),
    td({"type": lit("input_file")}, {"detail": lit("auto", "low", "high"), "file_data": _OSTR, "file_id": _OSTR, "file_url": _OSTR, "filename": _OSTR}),
)
OUTPUT_TEXT = td({"annotations": "list", "text": "str", "type": lit("output_text")}, {"logprobs": opt("list")})
REFUSAL = td({"refusal": "str", "type": lit("refusal")})
_SUMMARY = td({"text": "str", "type": lit("summary_text")})
_REASONING_TEXT = td({"text": "str", "type": lit("reasoning_text")})
_PHASE = opt(lit("commentary", "final_answer"))

# Output models whose dict form is the output item; every other output model accepts a
# subset of what its input TypedDict accepts.
OUTPUT_MESSAGE = td(
    {"id": "str", "content": list_of(one_of(OUTPUT_TEXT, REFUSAL)), "role": lit("assistant"), "status": STATUS, "type": lit("message")},
    {"phase": _PHASE},
)
REASONING_ITEM = td(
    {"id": "str", "summary": list_of(_SUMMARY), "type": lit("reasoning")},
    {"content": opt(list_of(_REASONING_TEXT)), "encrypted_content": _OSTR, "status": opt(STATUS)},
)
FUNCTION_CALL = td(
    {"arguments": "str", "call_id": "str", "name": "str", "type": lit("function_call")},
    {"id": _OSTR, "async": opt("bool"), "caller": _CALLER, "namespace": _OSTR, "status": opt(STATUS)},
)

MEMBERS: tuple[Spec, ...] = (
    # EasyInputMessageParam, Message, ResponseOutputMessageParam
    td(
        {"content": one_of("str", list_of(INPUT_PART)), "role": lit("user", "assistant", "system", "developer")},
        {"phase": _PHASE, "type": lit("message")},
    ),
    td({"content": list_of(INPUT_PART), "role": lit("user", "system", "developer")}, {"status": STATUS, "type": lit("message")}),
    td({"id": "str", "content": "iter", "role": lit("assistant"), "status": STATUS, "type": lit("message")}, {"phase": _PHASE}),
    OUTPUT_MESSAGE,
    td(
        {"id": "str", "queries": list_of("str"), "status": lit("in_progress", "searching", "completed", "incomplete", "failed"), "type": lit("file_search_call")},
        {"results": opt("iter")},
    ),
    td(
        {"id": "str", "call_id": "str", "pending_safety_checks": "iter", "status": STATUS, "type": lit("computer_call")},
        {"action": "dict", "actions": "list"},
    ),
    td(
        {"call_id": "str", "output": "dict", "type": lit("computer_call_output")},
        {"id": _OSTR, "acknowledged_safety_checks": opt("iter"), "status": opt(STATUS)},
    ),
    td({"id": "str", "action": "dict", "status": lit("in_progress", "searching", "completed", "incomplete", "failed"), "type": lit("web_search_call")}),
    FUNCTION_CALL,
    td(
        {"output": one_of("str", list_of(OUTPUT_PART)), "type": lit("function_call_output")},
        {"id": _OSTR, "call_id": _OSTR, "caller": _CALLER, "name": _OSTR, "namespace": _OSTR, "status": opt(STATUS)},
    ),
    td({"arguments": "any", "type": lit("tool_search_call")}, {"id": _OSTR, "call_id": _OSTR, "execution": lit("server", "client"), "status": opt(STATUS)}),
    td({"tools": "iter", "type": lit("tool_search_output")}, {"id": _OSTR, "call_id": _OSTR, "execution": lit("server", "client"), "status": opt(STATUS)}),
    td({"role": lit("developer"), "tools": "iter", "type": lit("additional_tools")}, {"id": _OSTR}),
    td(
        {"id": "str", "role": lit("unknown", "user", "assistant", "system", "critic", "discriminator", "developer", "tool"), "tools": "list", "type": lit("additional_tools")}
    ),
    td({"type": lit("configuration_update")}, {"id": _OSTR, "reasoning": "dict", "text": "dict"}),
    td({"id": "str", "summary": "iter", "type": lit("reasoning")}, {"content": "iter", "encrypted_content": _OSTR, "status": STATUS}),
    REASONING_ITEM,
    td({"encrypted_content": "str", "type": lit("compaction")}, {"id": _OSTR}),
    td({"id": "str", "status": lit("in_progress", "completed", "generating", "failed"), "type": lit("image_generation_call")}, {"result": _OSTR}),
    td(
        {"id": "str", "container_id": "str", "status": lit("in_progress", "completed", "incomplete", "interpreting", "failed"), "type": lit("code_interpreter_call")},
        {"code": _OSTR, "outputs": opt("iter")},
    ),
    td({"id": "str", "action": "dict", "call_id": "str", "status": STATUS, "type": lit("local_shell_call")}),
    td({"id": "str", "output": "str", "type": lit("local_shell_call_output")}, {"status": opt(STATUS)}),
    td({"action": "dict", "call_id": "str", "type": lit("shell_call")}, {"id": _OSTR, "caller": _CALLER, "environment": opt("dict"), "status": opt(STATUS)}),
    td({"call_id": "str", "output": "iter", "type": lit("shell_call_output")}, {"id": _OSTR, "caller": _CALLER, "max_output_length": opt("int"), "status": opt(STATUS)}),
    td({"call_id": "str", "operation": "dict", "status": lit("in_progress", "completed"), "type": lit("apply_patch_call")}, {"id": _OSTR, "caller": _CALLER}),
    td({"call_id": "str", "status": lit("completed", "failed"), "type": lit("apply_patch_call_output")}, {"id": _OSTR, "caller": _CALLER, "output": _OSTR}),
    td({"id": "str", "server_label": "str", "tools": "iter", "type": lit("mcp_list_tools")}, {"error": _OSTR}),
    td({"id": "str", "arguments": "str", "name": "str", "server_label": "str", "type": lit("mcp_approval_request")}),
    td({"approval_request_id": "str", "approve": "bool", "type": lit("mcp_approval_response")}, {"id": _OSTR, "reason": _OSTR}),
    td(
        {"id": "str", "arguments": "str", "name": "str", "server_label": "str", "type": lit("mcp_call")},
        {"approval_request_id": _OSTR, "error": opt("dict"), "output": _OSTR, "status": opt(lit("in_progress", "completed", "incomplete", "calling", "failed"))},
    ),
    td({"call_id": "str", "output": one_of("str", "iter"), "type": lit("custom_tool_call_output")}, {"id": "str", "caller": _CALLER}),
    td(
        {"call_id": "str", "input": "str", "name": "str", "type": lit("custom_tool_call")},
        {"async": opt("bool"), "id": _OSTR, "caller": _CALLER, "namespace": _OSTR},
    ),
    td({"type": lit("compaction_trigger")}, {"id": _OSTR}),
    td({"id": "str"}, {"type": opt(lit("item_reference"))}),
    td({"id": "str", "call_id": "str", "code": "str", "fingerprint": "str", "type": lit("program")}),
    td({"id": "str", "call_id": "str", "result": "str", "status": lit("completed", "incomplete"), "type": lit("program_output")}),
)


def prepare(item: Any) -> Any:
    """vLLM's ``input_item_parsing`` and input-image default, before the union is tried."""
    if not isinstance(item, dict):
        return item
    content = item.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "input_image" and "detail" not in p for p in content):
        item = {**item, "content": [{**p, "detail": "auto"} if isinstance(p, dict) and p.get("type") == "input_image" and "detail" not in p else p for p in content]}
    kind = item.get("type")
    if kind == "reasoning" and "id" not in item:
        return {**item, "id": "rs_"}
    if kind == "message" and item.get("role") == "assistant" and isinstance(content, list):
        out = {"id": "msg_", "status": "completed", **item}
        out["content"] = [
            {**p, "annotations": []} if isinstance(p, dict) and p.get("type") == "output_text" and "annotations" not in p else p
            for p in item["content"]
        ]
        return out if accepts(OUTPUT_MESSAGE, out) else item
    return item


def is_output_message(item: dict) -> bool:
    """The item became an SDK ``ResponseOutputMessage`` (its text is ``content[0].text``)."""
    return accepts(OUTPUT_MESSAGE, item)


def valid_item(item: Any) -> bool:
    return any(accepts(m, item) for m in MEMBERS)
