"""Chat render: ``ChatCompletionRequest`` -> ``GenerateRequest`` (vLLM 0.33 semantics)."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.model.lru import BoundedLRU
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.protocol.chat_options import effective_tool_choice, history_tool_call_count, template_kwargs
from tokenbridge.protocol.engine import GenerateRequest
from tokenbridge.protocol.errors import ApiError, bad_request
from tokenbridge.protocol.ids import random_hex
from tokenbridge.protocol.openai import ChatCompletionRequest
from tokenbridge.render import conversation as conv
from tokenbridge.render import parser_adjust, sampling
from tokenbridge.render.chat_plans import Assembly, ChatShape, Choices, chat_plans, chat_shapes
from tokenbridge.render.harmony import is_harmony_model, render_harmony_ids


def random_id() -> str:
    return random_hex(8)


def renders_purely(model: ModelContext, cfg: ServeConfig, req: ChatCompletionRequest) -> bool:
    """Whether ``render_chat`` of ``req`` is a function of the request alone (given its request
    id): the model's own template, which reads neither the clock nor random text, through the
    tokenizer (Harmony prompts carry today's date; mistral mode builds prompts itself)."""
    if req.chat_template is not None or (req.chat_template_kwargs and "chat_template" in req.chat_template_kwargs):
        return False
    return (
        model.prompt_memo.enabled
        and "chat_template" not in cfg.default_chat_template_kwargs
        and not hasattr(model.tokenizer, "render_chat")
        and not is_harmony_model(model.config)
    )


def validate_tools(
    req: ChatCompletionRequest, cfg: ServeConfig, tool_parsing_available: bool, origin: str = "chat"
) -> Any:
    """vLLM's tool/tool_choice rules; returns the effective tool_choice.

    ``origin`` names the route the request came from. Messages and Responses requests are
    converted after vLLM's request validators ran, so their tool_choice is taken as is;
    Responses also skips the tool-parser check (vLLM's ``render_responses`` has none).
    """
    if origin == "responses":
        return req.tool_choice
    if origin == "messages":
        return check_tool_parser(req.tool_choice, cfg, tool_parsing_available)
    if req.tools == []:
        raise bad_request(
            "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.",
            "tools",
        )
    choice = effective_tool_choice(req)
    if choice != "none":
        if not req.tools:
            raise bad_request("When using `tool_choice`, `tools` must be set.", "tool_choice")
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            names = {(t.get("function") or {}).get("name") for t in req.tools}
            if name not in names:
                raise bad_request(
                    "The tool specified in `tool_choice` does not match any of the specified `tools`",
                    "tool_choice",
                )
        elif choice not in ("auto", "required"):
            raise bad_request(
                f"Invalid value for `tool_choice`: {choice}! Only named tools, \"none\", \"auto\" or "
                "\"required\" are supported.",
                "tool_choice",
            )
    return check_tool_parser(choice, cfg, tool_parsing_available)


def check_tool_parser(choice: Any, cfg: ServeConfig, tool_parsing_available: bool) -> Any:
    """A tool_choice other than "none" needs a tool parser; returns ``choice``."""
    if not tool_parsing_available and choice not in (None, "none"):
        if choice == "auto" and not cfg.enable_auto_tool_choice:
            raise bad_request('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
        if choice != "auto":
            desc = f'function "{choice["function"]["name"]}"' if isinstance(choice, dict) else f'"{choice}"'
            raise bad_request(f"tool_choice={desc} requires --tool-call-parser to be set")
    return choice


def render_prompt(
    model: ModelContext,
    cfg: ServeConfig,
    messages: list[dict],
    tools: list[dict] | None,
    kwargs: dict,
    request_template: str | None,
    documents: list[dict] | None = None,
) -> str:
    """Messages -> prompt text through the chat template (shared by render and /tokenize)."""
    if not messages:
        raise bad_request(
            "Cannot apply chat template to an empty conversation. At least one message is required."
        )
    source = model.chat_template
    if request_template is not None or kwargs.get("chat_template") is not None:
        if not cfg.trust_request_chat_template:
            raise bad_request(
                "Chat template is passed with request, but --trust-request-chat-template is not set. "
                "Refused request with untrusted chat template."
            )
        source = request_template if request_template is not None else kwargs["chat_template"]
    if source is None:
        raise bad_request(
            "As of transformers v4.44, default chat template is no longer allowed, so you must provide "
            "a chat template if the tokenizer does not define one."
        )
    conversation = conv.prepare_messages(messages, content_format(cfg, source))
    return conv.apply_template(
        source, conversation, kwargs["continue_final_message"], lambda: _template_context(model, tools, kwargs, documents)
    )


def content_format(cfg: ServeConfig, source: str) -> str:
    fmt = cfg.chat_template_content_format
    return conv.detect_content_format(source) if fmt == "auto" else fmt


def _template_context(model: ModelContext, tools: list[dict] | None, kwargs: dict, documents: list[dict] | None) -> dict:
    """The template's variables but the messages, from the template kwargs and the request."""
    variables = {k: v for k, v in kwargs.items() if k not in ("add_generation_prompt", "continue_final_message", "chat_template")}
    return conv.template_context(tools, model.tokenizer.special_tokens, kwargs["add_generation_prompt"],
                                 kwargs["continue_final_message"], variables, documents)


def known_shape(model: ModelContext, cfg: ServeConfig, req: ChatCompletionRequest, choices: Choices,
                assembly: Assembly) -> ChatShape:
    """What ``req``'s fields other than its messages decided, for bodies that repeat them."""
    return ChatShape(model, cfg, msgspec.structs.replace(req, messages=[]), choices, assembly,
                     renders_purely(model, cfg, req), content_format(cfg, model.chat_template),
                     _template_context(model, choices.tools, choices.kwargs, req.documents))


def chat_prompt_ids(
    model: ModelContext,
    cfg: ServeConfig,
    messages: list[dict],
    tools: list[dict] | None,
    kwargs: dict,
    request_template: str | None,
    documents: list[dict] | None,
    add_special: bool,
    truncate: int | None,
    check_length: bool,
    shape: ChatShape | None = None,
) -> list[int]:
    """Messages -> prompt ids through the template and tokenizer, remembered per conversation.

    Only the model's own template is memoized (a request's template is untrusted and rare);
    the length check runs on every call, hit or not, so a hit answers what a miss would.
    ``shape``: the template's other variables, made before (``known_shape``).
    """
    memo = model.prompt_memo
    key = None
    if truncate is None and request_template is None and kwargs.get("chat_template") is None:
        key = memo.key((messages, tools, kwargs, documents, add_special))
    hit = memo.get(key) if key is not None else None
    if hit is not None:
        chars, ids = hit
        if check_length:
            check_prompt_chars(chars, model, truncate)
        return ids
    if shape is None:
        text = render_prompt(model, cfg, messages, tools, kwargs, request_template, documents)
    else:
        conversation = conv.prepare_messages(messages, shape.content_format)
        context = shape.context
        text = conv.apply_template(model.chat_template, conversation, context["continue_final_message"], lambda: context)
    if check_length:
        check_prompt_chars(len(text), model, truncate)
    ids = encode_prompt(model, text, add_special, truncate)
    if key is not None:
        memo.put(key, len(text), ids)
    return ids


def render_prompt_ids(
    model: ModelContext, messages: list[dict], tools: list[dict] | None, kwargs: dict
) -> list[int]:
    """Messages -> prompt ids for tokenizers that render chats themselves (mistral mode)."""
    if not messages:
        raise bad_request(
            "Cannot apply chat template to an empty conversation. At least one message is required."
        )
    try:
        return model.tokenizer.render_chat(
            conv.as_parsed_by_vllm(messages), tools,
            kwargs["add_generation_prompt"], kwargs["continue_final_message"],
        )
    except ValueError as e:
        raise bad_request(str(e)) from e


def check_mistral_request(req: ChatCompletionRequest) -> None:
    """vLLM's mistral-mode request checks; long tool-call ids are cut to their last 9 characters."""
    from tokenbridge.model.mistral import reasoning_efforts, shorten_tool_call_ids

    if req.chat_template is not None or req.chat_template_kwargs is not None:
        raise bad_request("chat_template is not supported for Mistral tokenizers.", "chat_template")
    effort = getattr(req, "reasoning_effort", None)
    if effort and effort not in reasoning_efforts():
        raise bad_request(
            f"reasoning_effort={effort} is not supported by Mistral models. "
            f"Supported values are: {reasoning_efforts()}.",
            "reasoning_effort",
        )
    shorten_tool_call_ids(req.messages)


def check_token_budget(max_output: int | None, max_output_param: str, truncate: int | None, max_model_len: int) -> None:
    """vLLM's ``TokenizeParams`` checks, made before the prompt is rendered."""
    if max_output is not None and max_output > max_model_len:
        raise bad_request(
            f"{max_output_param}={max_output} cannot be greater than max_model_len={max_model_len}. "
            "Please request fewer output tokens.",
            max_output_param,
            max_output,
        )
    if truncate is not None and truncate > max_model_len:
        raise bad_request(
            f"truncate_prompt_tokens={truncate} cannot be greater than max_model_len = {max_model_len}. "
            "Please request a smaller truncation size.",
            "truncate_prompt_tokens",
            truncate,
        )


def check_prompt_chars(chars: int, model: ModelContext, truncate: int | None) -> None:
    """Reject text that cannot fit before paying for tokenization (skipped when truncating)."""
    bound = model.max_model_len * model.tokenizer.max_chars_per_token
    if truncate is None and chars > bound:
        n = model.max_model_len
        raise bad_request(
            f"This model's maximum context length is {n} tokens. However, your prompt "
            f"contains {chars} characters (more than {bound} characters, which is the upper bound "
            f"for {n} input tokens). Please reduce the length of the input prompt.",
            "input_text",
            chars,
        )


def encode_prompt(model: ModelContext, text: str, add_special: bool, truncate: int | None) -> list[int]:
    """Tokenize; with truncation the tokenizer itself keeps the last tokens, specials included."""
    if truncate is None:
        return model.tokenizer.encode(text, add_special_tokens=add_special)
    keep = model.max_model_len - 1 if truncate < 0 else truncate
    return model.tokenizer.encode_keep_last(text, keep, add_special_tokens=add_special)


def fit_prompt(
    ids: list[int], truncate: int | None, max_model_len: int, exact_count: bool = False
) -> list[int]:
    """Truncate from the left as asked (``-1``: keep room for one output token), then check length.

    vLLM's tokenizer stops at ``max_model_len + 1`` tokens, so an over-long prompt is reported
    as containing "at least" that many; ids rendered whole (``exact_count``) report their count.
    """
    if truncate is not None:
        keep = max_model_len - 1 if truncate < 0 else truncate
        if keep < len(ids):
            ids = ids[len(ids) - keep :] if keep else []
    if len(ids) > max_model_len:
        n = len(ids) if exact_count else min(len(ids), max_model_len + 1)
        at_least = "at least " if n == max_model_len + 1 else ""
        raise bad_request(
            f"This model's maximum context length is {max_model_len} tokens. However, your prompt "
            f"contains {at_least}{n} input tokens, which exceeds this limit even without any output "
            "tokens. Please reduce the length of the input prompt.",
            "input_tokens",
            n,
        )
    return ids


def common_checks(req: Any) -> None:
    if req.use_beam_search:
        raise bad_request("Beam search is not supported by the render endpoint")
    if req.stream_options and not req.stream:
        raise bad_request("Stream options can only be defined when `stream=True`.", "stream_options")
    sampling.check_ranges(req)


def resolve_max_tokens(
    requested: int | None, defaults: dict, prompt_len: int, truncate: int | None, max_model_len: int
) -> int:
    """vLLM's ``get_max_tokens``: the smallest of the room left, the request (or server default)."""
    if truncate is not None:
        prompt_len = min(prompt_len, max_model_len if truncate == -1 else truncate)
    if prompt_len > max_model_len:
        raise bad_request(
            f"Input length ({prompt_len}) exceeds model's maximum context length ({max_model_len})."
        )
    room = max_model_len - prompt_len
    if requested is None:
        requested = defaults.get("max_new_tokens")
    return room if requested is None else min(requested, room)


def sampling_values(req: Any, model: ModelContext, max_tokens: int | None, skip_special: bool | None) -> dict:
    """vLLM's ``to_sampling_params``: request value, else server default, else neutral."""
    defaults = sampling.resolved_defaults(model.generation_defaults)
    if skip_special is None:
        skip_special = defaults["skip_special_tokens"]
    values: dict[str, Any] = {"n": req.n, "watermarking": getattr(req, "watermarking", None)}
    for k, default, cast in defaults["fields"]:
        v = getattr(req, k)
        values[k] = default if v is None else cast(v)
    stop = req.stop
    values.update({
        "seed": req.seed,
        "stop": [stop] if isinstance(stop, str) else list(stop or ()),
        "stop_token_ids": list(req.stop_token_ids or ()),
        "ignore_eos": req.ignore_eos,
        "max_tokens": max_tokens,
        "min_tokens": req.min_tokens,
        "logprob_token_ids": req.logprob_token_ids or None,
        "skip_special_tokens": skip_special,
        "spaces_between_special_tokens": req.spaces_between_special_tokens,
        "include_stop_str_in_output": req.include_stop_str_in_output,
        "output_kind": 1 if req.stream else 2,
        "skip_clone": True,
        "structured_outputs": sampling.structured_outputs(req.response_format, req.structured_outputs),
        "logit_bias": sampling.logit_bias(req.logit_bias),
        "allowed_token_ids": req.allowed_token_ids,
        "extra_args": sampling.extra_args(req.vllm_xargs),
        "bad_words": list(req.bad_words or ()),
        "thinking_token_budget": req.thinking_token_budget,
        "repetition_detection": req.repetition_detection,
    })
    return values


def stream_options(req: Any) -> dict | None:
    if not req.stream or req.stream_options is None:
        return None
    return {
        "include_usage": req.stream_options.get("include_usage", True),
        "continuous_usage_stats": req.stream_options.get("continuous_usage_stats", False),
    }


def transfer_params(req: Any) -> tuple[Any, Any]:
    xargs = req.vllm_xargs or {}
    return (
        req.kv_transfer_params if req.kv_transfer_params is not None else xargs.get("kv_transfer_params"),
        req.ec_transfer_params if req.ec_transfer_params is not None else xargs.get("ec_transfer_params"),
    )


def render_chat(
    model: ModelContext,
    cfg: ServeConfig,
    req: ChatCompletionRequest,
    request_id: str | None,
    origin: str = "chat",
    shape_key: tuple | None = None,
) -> GenerateRequest:
    """Render a chat request; ``origin`` ("chat", "messages", "responses") is the route whose
    body was converted to it (see ``validate_tools``). ``shape_key``: the chat body's key in
    ``chat_shapes`` when none is kept for it yet; one is kept once the render succeeds."""
    if origin == "chat":  # its tool calls were checked as it was decoded (``check_chat_request``)
        conv.check_content_parts(req.messages)
    else:
        conv.check_tool_call_arguments(req.messages, full=False)
    ids_rendered = renders_ids(model)
    # gpt-oss prompts are built with Harmony, skipping the template's token budget checks.
    harmony = is_harmony_model(model.config)
    if ids_rendered and origin != "responses":  # vLLM's render_responses skips these checks
        check_mistral_request(req)
    # Harmony and mistral-mode prompts are built from the request itself: no plan is kept.
    key = None if ids_rendered or harmony else chat_plans.key(model, cfg, req, origin)
    plan = chat_plans.get(key, model, cfg) if key is not None else None
    choices = plan[0] if plan is not None else _choose(model, cfg, req, harmony, origin)
    if harmony:
        ids = render_harmony_ids(req.messages, req.tools, req.reasoning_effort, model.tokenizer,
                                 keep_empty_answers=origin == "responses")
    elif ids_rendered:
        ids = render_prompt_ids(model, req.messages, choices.tools, choices.kwargs)
    else:
        ids = chat_prompt_ids(
            model, cfg, req.messages, choices.tools, choices.kwargs, req.chat_template, req.documents,
            bool(req.add_special_tokens), req.truncate_prompt_tokens, check_length=True,
        )
    if not harmony:
        ids = fit_prompt(ids, req.truncate_prompt_tokens, model.max_model_len, exact_count=ids_rendered)
    elif origin == "responses" and req.truncate_prompt_tokens is not None:  # truncation "auto"
        ids = fit_prompt(ids, req.truncate_prompt_tokens, model.max_model_len, exact_count=True)
    if not ids:  # truncate_prompt_tokens=0 leaves none
        raise bad_request("No token_ids rendered")
    max_tokens = resolve_max_tokens(
        choices.requested, model.generation_defaults, len(ids), req.truncate_prompt_tokens, model.max_model_len
    )
    if plan is not None:
        assembly = plan[1]
    else:
        assembly = _assemble(model, cfg, req, choices, harmony, origin)
        if key is not None:
            chat_plans.put(key, model, cfg, choices, assembly)
    if key is not None:  # the values are a kept plan's
        wire = sampling.serialize_kept(assembly.values, max_tokens)
    else:
        wire = sampling.serialize({**assembly.values, "max_tokens": max_tokens})
    gen = _answer(model, req, choices, assembly, ids, wire, request_id, harmony, history_tool_call_count(req.messages))
    if shape_key is not None and key is not None and req.truncate_prompt_tokens is None and req.chat_template is None \
            and choices.kwargs.get("chat_template") is None:
        chat_shapes.put(shape_key, known_shape(model, cfg, req, choices, assembly))
    return gen


def render_known_chat(model: ModelContext, cfg: ServeConfig, shape: ChatShape, conversation: list[dict],
                      request_id: str | None) -> GenerateRequest:
    """``render_chat`` of a chat body whose other fields were rendered before (``shape``) and
    whose messages are plain text (``chat_plans.plain_conversation``): every check of those
    fields passed then, and plain text passes the message checks, so only the prompt and what
    it decides are made again, by the same steps."""
    req, choices = shape.req, shape.choices
    ids = chat_prompt_ids(
        model, cfg, conversation, choices.tools, choices.kwargs, None, req.documents,
        bool(req.add_special_tokens), None, check_length=True, shape=shape,
    )
    ids = fit_prompt(ids, None, model.max_model_len)
    if not ids:
        raise bad_request("No token_ids rendered")
    max_tokens = resolve_max_tokens(choices.requested, model.generation_defaults, len(ids), None, model.max_model_len)
    wire = sampling.serialize_kept(shape.assembly.values, max_tokens)
    return _answer(model, req, choices, shape.assembly, ids, wire, request_id, False, 0)


def _answer(
    model: ModelContext, req: ChatCompletionRequest, choices: Choices, assembly: Assembly, ids: list[int],
    sampling_params: dict, request_id: str | None, harmony: bool, history_calls: int,
) -> GenerateRequest:
    """The ``GenerateRequest`` of a rendered prompt."""
    reasoning_ended = assembly.reasoning_ended
    if assembly.reasoning_parser is not None:
        ctx = ParseContext(chat_template_kwargs=choices.kwargs, prompt_token_ids=ids, vocab=model.tokenizer)
        reasoning_ended = bool(assembly.reasoning_parser.reasoning_ended_in_prompt(ids, ctx))
    kv, ec = assembly.transfer
    return GenerateRequest(
        request_id=f"chatcmpl-{request_id or req.request_id or random_id()}",
        token_ids=ids,
        sampling_params=sampling_params,
        model=req.model,
        reasoning_ended=reasoning_ended,
        reasoning_parser_kwargs=assembly.reasoning_kwargs,
        return_token_ids=req.return_token_ids,
        parse_context={
            "tools": assembly.tools,
            "tool_choice": choices.tool_choice,
            "parallel_tool_calls": req.parallel_tool_calls if req.parallel_tool_calls is not None else True,
            "include_reasoning": req.include_reasoning,
            # Harmony output is parsed without template kwargs.
            "chat_template_kwargs": {} if harmony else choices.kwargs,
            "history_tool_call_cnt": history_calls,
        },
        stream=bool(req.stream),
        stream_options=assembly.stream_options,
        cache_salt=req.cache_salt,
        priority=req.priority,
        kv_transfer_params=kv,
        ec_transfer_params=ec,
    )


def renders_ids(model: ModelContext) -> bool:
    """The tokenizer renders chats to ids itself (mistral mode), not through a template."""
    return hasattr(model.tokenizer, "render_chat")


def _choose(model: ModelContext, cfg: ServeConfig, req: ChatCompletionRequest, harmony: bool, origin: str) -> Choices:
    """The checks made before the prompt is rendered, and the tool choice and template kwargs."""
    common_checks(req)
    if req.add_generation_prompt and req.continue_final_message and not harmony and not renders_ids(model):
        # Only the default add_generation_prompt is left (the body check refuses both given):
        # transformers refuses the pair (mistral-common at render); Harmony prompts ignore both.
        raise bad_request(
            "continue_final_message and add_generation_prompt are not compatible. Use "
            "continue_final_message when you want the model to continue the final message, and "
            "add_generation_prompt when you want to add a header that will prompt it to start a new "
            "assistant message instead."
        )
    requested = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
    if not harmony:
        check_token_budget(
            requested,
            "max_completion_tokens" if req.max_completion_tokens is not None else "max_tokens",
            req.truncate_prompt_tokens,
            model.max_model_len,
        )
    # vLLM builds a tool parser only with --enable-auto-tool-choice; Mistral and Harmony parse tools anyway.
    tool_parser = cfg.tool_call_parser if cfg.enable_auto_tool_choice else None
    tool_choice = validate_tools(
        req, cfg, bool(tool_parser) or model.tokenizer.kind == "mistral" or harmony, origin
    )
    if tool_choice == "required" and req.tools == []:  # a Responses body without function tools
        raise bad_request(
            "tool_choice requires a function call, but tools contains no function tool the model can call.",
            "tool_choice",
        )
    kwargs = template_kwargs(req, cfg, req.add_generation_prompt, req.continue_final_message)
    # A Responses body's function tools reach the template even when there are none ([]).
    shown = req.tools or (origin == "responses" and req.tools is not None)
    tools = req.tools if tool_choice != "none" or shown else None
    return Choices(requested, tool_parser, tool_choice, kwargs, tools)


def _assemble(
    model: ModelContext, cfg: ServeConfig, req: ChatCompletionRequest, choices: Choices, harmony: bool, origin: str
) -> Assembly:
    """The sampling values (vLLM's ``to_sampling_params`` and the parsers' ``adjust_request``,
    checked after the prompt as there) and the answer's parts that the prompt does not decide."""
    values = sampling_values(req, model, None, req.skip_special_tokens)
    tool_parser = choices.tool_parser and registry.canonical_tool_name(choices.tool_parser)
    reasoning_parser = cfg.reasoning_parser and registry.canonical_reasoning_name(cfg.reasoning_parser)
    adjusted = parser_adjust.adjust_request(
        tool_parser,
        reasoning_parser,
        req.tools,
        choices.tool_choice,
        req.parallel_tool_calls,
        values["structured_outputs"],
        harmony,
        # Mistral's forced-choice schema is never put on a Responses request.
        overridable=origin != "responses"
        and req.structured_outputs is None
        and (req.response_format or {}).get("type", "text") in ("text", "json_object", "json_schema"),
    )
    if adjusted.skip_special_tokens is not None:
        values["skip_special_tokens"] = adjusted.skip_special_tokens
    if adjusted.structured_outputs is not None:
        values["structured_outputs"] = sampling.structured_outputs_params(adjusted.structured_outputs)
    if req.logprobs and not req.logprob_token_ids:
        values["logprobs"] = req.top_logprobs
    values["prompt_logprobs"] = req.prompt_logprobs
    if req.prompt_logprobs is None and req.echo:
        values["prompt_logprobs"] = req.top_logprobs
    rcls = None
    reasoning_ended = None
    if not req.include_reasoning:
        reasoning_ended = True
    elif cfg.reasoning_parser:
        rcls = registry.get_reasoning_parser(cfg.reasoning_parser)
        reasoning_ended = False if rcls is None else None
    return Assembly(
        values=values,
        reasoning_parser=rcls,
        reasoning_ended=reasoning_ended,
        reasoning_kwargs={"chat_template_kwargs": choices.kwargs} if cfg.reasoning_parser else None,
        tools=conv.tool_dicts(req.tools),
        transfer=transfer_params(req),
        stream_options=stream_options(req),
    )


__all__ = ["render_chat", "render_prompt", "ApiError"]
