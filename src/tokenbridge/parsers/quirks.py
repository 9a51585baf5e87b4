"""vLLM 0.33's compatibility quirks that shape an answer beyond what the family parsers decide,
each with the vLLM code it mirrors (paths under ``vllm/``). The code that applies one names its
key; ``derender.parsing.ChoiceParser`` applies most of them when the parse ends (``Final``).
"""

from __future__ import annotations

VLLM_QUIRKS: dict[str, tuple[str, str]] = {
    "blank_content_null_with_calls": (
        "content that is only whitespace is null once calls were made (ToolParser.blank_content_is_null)",
        "parser/abstract_parser.py Parser._extract_tool_calls (auto branch)",
    ),
    "engine_no_call_null_content": (
        "an engine-based pair that finds no call answers the tool parser's content, null when empty",
        "parser/abstract_parser.py Parser._extract_tool_calls (engine-based fallback)",
    ),
    "thinking_off_content_kept_empty": (
        "Qwen3 with thinking turned off (the adapter passes the output through): an empty answer "
        "is \"\" content, whatever the tool parser would leave (MarkerFormat.off_keeps_empty_content)",
        "parser/qwen3.py extract_reasoning (Qwen3Parser, thinking disabled: the output as content)",
    ),
    "engine_none_keeps_parser_content": (
        "under tool_choice \"none\" an engine-based parser still parses; its content (and its own "
        "empty value, ToolParser.empty_content) is the answer, its calls are dropped",
        "parser/abstract_parser.py Parser._extract_tool_calls (tool_choice == \"none\")",
    ),
    "forced_content_empty": (
        "with tool_choice \"required\" or a named tool, empty content is \"\", never null",
        "entrypoints/openai/chat_completion/message_assembly.py assemble_chat_message_fields",
    ),
    "forced_blank_is_empty": (
        "required/named falling back to the parser: blank text with no call is no content",
        "parser/abstract_parser.py Parser._extract_tool_calls (no tool calls, required/named)",
    ),
    "no_reasoning_when_excluded": (
        "include_reasoning false: reasoning is null",
        "entrypoints/openai/chat_completion/message_assembly.py assemble_chat_message_fields",
    ),
    "identity_content_kept_empty": (
        "no reasoning parser, or the identity one: the content is the output, \"\" kept",
        "reasoning/identity_reasoning_parser.py IdentityReasoningParser.extract_reasoning",
    ),
    "first_call_only": (
        "parallel_tool_calls false: only the first call",
        "entrypoints/serve/utils/tool_calls_utils.py maybe_filter_parallel_tool_calls",
    ),
    "default_call_id": (
        "a call the parser gives no id gets chatcmpl-tool-<16 hex>",
        "renderers/chat_utils/tool_call.py make_tool_call_id",
    ),
}
