"""``hf``/``beam`` (``families/response_template.py``): the checkpoint's response template read
as vLLM 0.33's ``ResponseTemplateParser`` reads it, tool side alone and with its reasoning side in
front, one-shot and chunked.

Tool-side expected values are vLLM 0.33's non-streaming ``ResponseTemplateParser`` answers (tool
parser only, no reasoning parser) for the same template, prompt and output, recorded with vLLM's
own stream classes. Templates: Qwen 3 (JSON calls, regex delimiters), Qwen 3.5 (``xml-inline``
calls with a captured name), Gemma 4 (lax JSON with custom string delimiters, literal-list
closer), a template whose fields all have openers (a content sink is added) and one with
``transform_each`` and a closer ending in the start anchor.

Reasoning-side expected values: for ``hf``/``beam``, vLLM 0.33's combined
``ResponseTemplateParser`` one-shot answer (its ``_ResponseStream`` with reasoning parsing on,
tool parsing on or off) for the same templates and prompts. Rows:
``[template, prompt, output, tool parser, [reasoning, content, [[name, arguments]...]]]``.

Known gaps: none known.
"""

from __future__ import annotations

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS
from feeding import feed, run_output, split

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.template import TemplateError

QWEN = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {"open_pattern": r"\s*<tool_call>", "close": "</tool_call>", "repeats": True,
                       "content": "json", "transform": {"type": "function", "function": "{content}"}},
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>)", "content": "text"},
    },
}
QWEN_XML = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>\s*</tool_call>", "repeats": True, "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", "content": "text"},
    },
}
GEMMA = {
    "defaults": {"role": "assistant"},
    "start_anchor": ["<|turn>model\n", "<tool_response|>"],
    "fields": {
        "thinking": {"open": "<|channel>thought\n", "close": "<channel|>", "content": "text"},
        "tool_calls": {
            "open_pattern": r"<\|tool_call>call:(?P<name>\w+)", "close": "<tool_call|>", "repeats": True,
            "content": "json", "content_args": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": ["<turn|>", "<|tool_response>", "<eos>"], "content": "text"},
    },
}
EXPLICIT = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "thinking": {"open": "[THINK]", "close": "[/THINK]"},
        "tool_calls": {"open": "[CALLS]", "close": "[/CALLS]", "content": "json", "transform": {
            "type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}},
    },
}
EACH = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {"open": "<calls>", "close": "</calls>", "content": "json", "transform_each": True,
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{parameters}"}}},
        "content": {"close": "<|end|><|assistant|>"},
    },
}
TEMPLATES = {"qwen": QWEN, "qwen_xml": QWEN_XML, "gemma": GEMMA, "explicit": EXPLICIT, "each": EACH}
PROMPTS = {
    "none": "",
    "qwen_think_open": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n",
    "qwen_think_closed": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "gemma_turn": "<bos><|turn>user\nhi<turn|>\n<|turn>model\n",
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"}}}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"}}}}},
]
TOKENIZER = tokenizers.Tokenizer.from_file(str(MODELS / "qwen3" / "tokenizer.json"))


class QwenVocab:
    """The real Qwen 3 tokenizer, as the parser sees it (prompt ids decode to the prompt)."""

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return TOKENIZER.decode(ids, skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> int | None:
        return TOKENIZER.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        return TOKENIZER.id_to_token(token_id)


def context(template: str, prompt: str, choice: str, with_tools: bool, **kw) -> ParseContext:
    ids = TOKENIZER.encode(PROMPTS[prompt], add_special_tokens=False).ids if PROMPTS[prompt] else None
    return ParseContext(tools=TOOLS if with_tools else None, tool_choice=choice, prompt_token_ids=ids,
                        vocab=QwenVocab(), response_template=TEMPLATES[template], **kw)


def run_tools(name: str, ctx: ParseContext, pieces: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """Feed the pieces with a snapshot/restore (through msgpack) between any two of them."""
    fed = feed(lambda: registry.get_tool_parser(name)(ctx), pieces, restore=True)
    return fed.content or None, fed.named_calls()


# (template, prompt, tool_choice, request has tools, output, vLLM content, vLLM calls)
CASES = [
    ('qwen', 'none', 'auto', True, 'Hello there', 'Hello there', []),
    ('qwen', 'none', 'none', True, 'Hello there', 'Hello there', []),
    ('qwen', 'qwen_think_open', 'auto', True, 'Hello there', 'Hello there', []),
    ('qwen', 'qwen_think_open', 'none', True, 'Hello there', 'Hello there', []),
    ('qwen', 'qwen_think_closed', 'auto', True, 'Hello there', 'Hello there', []),
    ('qwen', 'qwen_think_closed', 'none', True, 'Hello there', 'Hello there', []),
    ('qwen', 'none', 'auto', True, '<think>hmm</think>The answer is 4.', 'hmmThe answer is 4.', []),
    ('qwen', 'none', 'none', True, '<think>hmm</think>The answer is 4.', 'hmmThe answer is 4.', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<think>hmm</think>The answer is 4.', '<think>hmmThe answer is 4.', []),
    ('qwen', 'qwen_think_open', 'none', True, '<think>hmm</think>The answer is 4.', '<think>hmmThe answer is 4.', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<think>hmm</think>The answer is 4.', 'hmmThe answer is 4.', []),
    ('qwen', 'qwen_think_closed', 'none', True, '<think>hmm</think>The answer is 4.', 'hmmThe answer is 4.', []),
    ('qwen', 'none', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', None, [('get_weather', '{"city": "Paris"}')]),
    ('qwen', 'none', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', []),
    ('qwen', 'qwen_think_open', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', None, [('get_weather', '{"city": "Paris"}')]),
    ('qwen', 'qwen_think_closed', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', []),
    ('qwen', 'none', 'auto', True, 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', 'Let me check.', [('get_weather', '{"city": "Zürich 東京"}'), ('add', '{"a": 1, "b": 2.5}')]),
    ('qwen', 'none', 'none', True, 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', []),
    ('qwen', 'qwen_think_open', 'auto', True, 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', []),
    ('qwen', 'qwen_think_open', 'none', True, 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', []),
    ('qwen', 'qwen_think_closed', 'auto', True, 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', 'Let me check.', [('get_weather', '{"city": "Zürich 東京"}'), ('add', '{"a": 1, "b": 2.5}')]),
    ('qwen', 'qwen_think_closed', 'none', True, 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2.5}}\n</tool_call>', []),
    ('qwen', 'none', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', 'after', []),
    ('qwen', 'none', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', []),
    ('qwen', 'qwen_think_open', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', 'after', []),
    ('qwen', 'qwen_think_closed', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>after', []),
    ('qwen', 'none', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', None, [('get_weather', '{"city": "Paris"}')]),
    ('qwen', 'none', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
    ('qwen', 'qwen_think_open', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', None, [('get_weather', '{"city": "Paris"}')]),
    ('qwen', 'qwen_think_closed', 'none', True, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', []),
    ('qwen', 'none', 'auto', True, '<tool_call>\n{"name": "get_weather", "argu', None, []),
    ('qwen', 'none', 'none', True, '<tool_call>\n{"name": "get_weather", "argu', '<tool_call>\n{"name": "get_weather", "argu', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<tool_call>\n{"name": "get_weather", "argu', '<tool_call>\n{"name": "get_weather", "argu', []),
    ('qwen', 'qwen_think_open', 'none', True, '<tool_call>\n{"name": "get_weather", "argu', '<tool_call>\n{"name": "get_weather", "argu', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<tool_call>\n{"name": "get_weather", "argu', None, []),
    ('qwen', 'qwen_think_closed', 'none', True, '<tool_call>\n{"name": "get_weather", "argu', '<tool_call>\n{"name": "get_weather", "argu', []),
    ('qwen', 'none', 'auto', True, 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', 'before and after  ', [('add', '{"a": 1}')]),
    ('qwen', 'none', 'none', True, 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', []),
    ('qwen', 'qwen_think_open', 'auto', True, 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', []),
    ('qwen', 'qwen_think_open', 'none', True, 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', []),
    ('qwen', 'qwen_think_closed', 'auto', True, 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', 'before and after  ', [('add', '{"a": 1}')]),
    ('qwen', 'qwen_think_closed', 'none', True, 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', 'before<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> and after  ', []),
    ('qwen', 'none', 'auto', True, '<tool_call>{"name": "add"}</tool_call>', None, []),
    ('qwen', 'none', 'none', True, '<tool_call>{"name": "add"}</tool_call>', '<tool_call>{"name": "add"}</tool_call>', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<tool_call>{"name": "add"}</tool_call>', '<tool_call>{"name": "add"}</tool_call>', []),
    ('qwen', 'qwen_think_open', 'none', True, '<tool_call>{"name": "add"}</tool_call>', '<tool_call>{"name": "add"}</tool_call>', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<tool_call>{"name": "add"}</tool_call>', None, []),
    ('qwen', 'qwen_think_closed', 'none', True, '<tool_call>{"name": "add"}</tool_call>', '<tool_call>{"name": "add"}</tool_call>', []),
    ('qwen', 'none', 'auto', True, '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', None, [('add', '{"a": 1}')]),
    ('qwen', 'none', 'none', True, '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', []),
    ('qwen', 'qwen_think_open', 'none', True, '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', None, [('add', '{"a": 1}')]),
    ('qwen', 'qwen_think_closed', 'none', True, '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', []),
    ('qwen', 'none', 'auto', True, 'x<think>inner</think>y', 'xinnery', []),
    ('qwen', 'none', 'none', True, 'x<think>inner</think>y', 'xinnery', []),
    ('qwen', 'qwen_think_open', 'auto', True, 'x<think>inner</think>y', 'x<think>innery', []),
    ('qwen', 'qwen_think_open', 'none', True, 'x<think>inner</think>y', 'x<think>innery', []),
    ('qwen', 'qwen_think_closed', 'auto', True, 'x<think>inner</think>y', 'xinnery', []),
    ('qwen', 'qwen_think_closed', 'none', True, 'x<think>inner</think>y', 'xinnery', []),
    ('qwen', 'none', 'auto', True, 'reasoning text</think>\n\nfinal', 'reasoning text</think>\n\nfinal', []),
    ('qwen', 'none', 'none', True, 'reasoning text</think>\n\nfinal', 'reasoning text</think>\n\nfinal', []),
    ('qwen', 'qwen_think_open', 'auto', True, 'reasoning text</think>\n\nfinal', 'reasoning text\n\nfinal', []),
    ('qwen', 'qwen_think_open', 'none', True, 'reasoning text</think>\n\nfinal', 'reasoning text\n\nfinal', []),
    ('qwen', 'qwen_think_closed', 'auto', True, 'reasoning text</think>\n\nfinal', 'reasoning text</think>\n\nfinal', []),
    ('qwen', 'qwen_think_closed', 'none', True, 'reasoning text</think>\n\nfinal', 'reasoning text</think>\n\nfinal', []),
    ('qwen', 'none', 'auto', True, '  ', '  ', []),
    ('qwen', 'none', 'none', True, '  ', '  ', []),
    ('qwen', 'qwen_think_open', 'auto', True, '  ', '  ', []),
    ('qwen', 'qwen_think_open', 'none', True, '  ', '  ', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '  ', '  ', []),
    ('qwen', 'qwen_think_closed', 'none', True, '  ', '  ', []),
    ('qwen', 'none', 'auto', True, '', None, []),
    ('qwen', 'none', 'none', True, '', None, []),
    ('qwen', 'qwen_think_open', 'auto', True, '', None, []),
    ('qwen', 'qwen_think_open', 'none', True, '', None, []),
    ('qwen', 'qwen_think_closed', 'auto', True, '', None, []),
    ('qwen', 'qwen_think_closed', 'none', True, '', None, []),
    ('qwen', 'none', 'auto', True, '<tool_call>[1,2]</tool_call>tail', 'tail', []),
    ('qwen', 'none', 'none', True, '<tool_call>[1,2]</tool_call>tail', '<tool_call>[1,2]</tool_call>tail', []),
    ('qwen', 'qwen_think_open', 'auto', True, '<tool_call>[1,2]</tool_call>tail', '<tool_call>[1,2]</tool_call>tail', []),
    ('qwen', 'qwen_think_open', 'none', True, '<tool_call>[1,2]</tool_call>tail', '<tool_call>[1,2]</tool_call>tail', []),
    ('qwen', 'qwen_think_closed', 'auto', True, '<tool_call>[1,2]</tool_call>tail', 'tail', []),
    ('qwen', 'qwen_think_closed', 'none', True, '<tool_call>[1,2]</tool_call>tail', '<tool_call>[1,2]</tool_call>tail', []),
    ('qwen_xml', 'none', 'auto', True, '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', None, [('get_weather', '{"city": "Paris", "days": 3}')]),
    ('qwen_xml', 'none', 'auto', False, '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', None, [('get_weather', '{"city": "Paris", "days": "3"}')]),
    ('qwen_xml', 'none', 'auto', True, 'ok <tool_call>\n<function=add>\n<parameter=a>\n1.0\n</parameter>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call><tool_call><function=get_weather><parameter=metric>true</parameter></function></tool_call>', 'ok', [('add', '{"a": 1.0, "b": 2}'), ('get_weather', '{"metric": true}')]),
    ('qwen_xml', 'none', 'auto', False, 'ok <tool_call>\n<function=add>\n<parameter=a>\n1.0\n</parameter>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call><tool_call><function=get_weather><parameter=metric>true</parameter></function></tool_call>', 'ok', [('add', '{"a": "1.0", "b": "2"}'), ('get_weather', '{"metric": "true"}')]),
    ('qwen_xml', 'none', 'auto', True, '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis', None, [('get_weather', '{}')]),
    ('qwen_xml', 'none', 'auto', False, '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis', None, [('get_weather', '{}')]),
    ('qwen_xml', 'none', 'auto', True, '<tool_call><function=get_weather></function></tool_call>', None, [('get_weather', '{}')]),
    ('qwen_xml', 'none', 'auto', False, '<tool_call><function=get_weather></function></tool_call>', None, [('get_weather', '{}')]),
    ('gemma', 'none', 'auto', True, '<|channel>thought\nhmm<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>', 'hmm', [('get_weather', '{"city": "Paris", "days": 2}')]),
    ('gemma', 'gemma_turn', 'auto', True, '<|channel>thought\nhmm<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>', 'hmm', [('get_weather', '{"city": "Paris", "days": 2}')]),
    ('gemma', 'none', 'auto', True, 'Sure<|tool_call>call:add{a:1,b:2}<tool_call|><|tool_call>call:get_weather{city:<|"|>Ünïcode<|"|>}<tool_call|>', 'Sure', [('add', '{"a": 1, "b": 2}'), ('get_weather', '{"city": "Ünïcode"}')]),
    ('gemma', 'gemma_turn', 'auto', True, 'Sure<|tool_call>call:add{a:1,b:2}<tool_call|><|tool_call>call:get_weather{city:<|"|>Ünïcode<|"|>}<tool_call|>', 'Sure', [('add', '{"a": 1, "b": 2}'), ('get_weather', '{"city": "Ünïcode"}')]),
    ('gemma', 'none', 'auto', True, 'text<turn|>', 'text', []),
    ('gemma', 'gemma_turn', 'auto', True, 'text<turn|>', 'text', []),
    ('gemma', 'none', 'auto', True, '<|tool_call>call:add{a:1,b:<tool_call|>rest', 'rest', []),
    ('gemma', 'gemma_turn', 'auto', True, '<|tool_call>call:add{a:1,b:<tool_call|>rest', 'rest', []),
    ('gemma', 'none', 'auto', True, '<|tool_call>call:add{a:1', None, []),
    ('gemma', 'gemma_turn', 'auto', True, '<|tool_call>call:add{a:1', None, []),
    ('explicit', 'none', 'auto', False, '[THINK]a[/THINK]hello[CALLS]{"name": "add", "arguments": {"a": 1}}[/CALLS]', 'ahello', [('add', '{"a": 1}')]),
    ('explicit', 'none', 'auto', False, 'plain [CALLS]{"name": "add", "arguments": {"a": 1}}[/CALLS] tail', 'plain  tail', [('add', '{"a": 1}')]),
    ('explicit', 'none', 'auto', False, '[CALLS]{"name": "add"}[/CALLS]', None, []),
    ('explicit', 'none', 'auto', False, '[CALLS]not json[/CALLS]x', 'x', []),
    ('explicit', 'none', 'auto', False, '[THINK', '[THINK', []),
    ('each', 'none', 'auto', True, 'hi<calls>[{"name": "add", "parameters": {"a": 1}}, {"name": "get_weather", "parameters": {"city": "Oslo"}}]</calls>', 'hi', [('add', '{"a": 1}'), ('get_weather', '{"city": "Oslo"}')]),
    ('each', 'none', 'auto', True, 'answer<|end|><|assist', 'answer', []),
    ('each', 'none', 'auto', True, 'answer<|end|>', 'answer', []),
    ('each', 'none', 'auto', True, '<calls>[{"name": "add"}]</calls>', None, []),
]


@pytest.mark.parametrize("name", ["hf", "beam"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[4][:24]!r}")
def test_one_shot_matches_vllm(name, case):
    template, prompt, choice, with_tools, text, content, calls = case
    assert run_tools(name, context(template, prompt, choice, with_tools), [text]) == (content, calls)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_chunking_accumulates_to_one_shot(data):
    template, prompt, choice, with_tools, text, content, calls = data.draw(st.sampled_from(CASES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assert run_tools("hf", context(template, prompt, choice, with_tools), pieces) == (content, calls)


def test_parse_context_gets_response_template_from_tokenizer_config():
    ctx = context("qwen", "none", "auto", True)
    assert ctx.response_template is QWEN


def test_unservable_template_is_rejected_and_a_missing_one_leaves_content():
    cls = registry.get_tool_parser("hf")
    text = '<tool_call>{"name": "add", "arguments": {}}</tool_call>  '
    assert run_tools("hf", ParseContext(tools=TOOLS, tool_choice="auto"), [text]) == (text, [])
    bad = {"start_anchor": "A", "fields": {"summary": {"open": "<s>", "close": "</s>"}}}
    with pytest.raises(TemplateError):
        cls(ParseContext(tools=TOOLS, tool_choice="auto", response_template=bad))


def test_reasoning_parser_in_front_consumed_the_open_thinking():
    """With ``--reasoning-parser hf`` the thinking the prompt opened is gone from the text."""
    ctx = context("qwen", "qwen_think_open", "auto", True, reasoning_parser="hf")
    text = '\n\nSure.<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert run_tools("hf", ctx, [text]) == ("\n\nSure.", [("add", '{"a": 1, "b": 2}')])


def test_registry_flags():
    for name in ("hf", "beam"):
        cls = registry.get_tool_parser(name)
        assert cls.engine_based and not cls.supports_required_and_named
        assert not cls.blank_content_is_null


# -- the reasoning side in front of the tool side ----------------------------------------------

TEMPLATE_CASES = [
    ['qwen', 'none', '<think>plan it</think>\n\nThe answer.', True, ['plan it', '\n\nThe answer.', []]],
    ['qwen', 'none', '<think>plan it</think>\n\nThe answer.', False, ['plan it', '\n\nThe answer.', []]],
    ['qwen', 'none', '<think>plan</think>\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', True, ['plan', '\n\nLet me check.', [['get_weather', '{"city": "Paris", "days": 3}']]]],
    ['qwen', 'none', '<think>plan</think>\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', False, ['plan', '\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', []]],
    ['qwen', 'none', '<think>a</think><tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', True, ['a', 'after', [['add', '{"a": 1, "b": 2}'], ['get_weather', '{"city": "Zürich"}']]]],
    ['qwen', 'none', '<think>a</think><tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', False, ['a', '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', []]],
    ['qwen', 'none', '<think>unfinished reasoning', True, ['unfinished reasoning', None, []]],
    ['qwen', 'none', '<think>unfinished reasoning', False, ['unfinished reasoning', None, []]],
    ['qwen', 'none', 'still thinking</think>\n\ncontent here', True, [None, 'still thinking</think>\n\ncontent here', []]],
    ['qwen', 'none', 'still thinking</think>\n\ncontent here', False, [None, 'still thinking</think>\n\ncontent here', []]],
    ['qwen', 'none', 'no markers at all', True, [None, 'no markers at all', []]],
    ['qwen', 'none', 'no markers at all', False, [None, 'no markers at all', []]],
    ['qwen', 'none', '<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y</think>done', True, ['x <tool_call>{"name": "add", "arguments": {}}</tool_call> y', 'done', []]],
    ['qwen', 'none', '<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y</think>done', False, ['x <tool_call>{"name": "add", "arguments": {}}</tool_call> y', 'done', []]],
    ['qwen', 'none', '<think>r</think><tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', True, ['r', None, []]],
    ['qwen', 'none', '<think>r</think><tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', False, ['r', '<tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', []]],
    ['qwen', 'none', '<think>r</think>ok<tool_call>\n{"name": "add", "argum', True, ['r', 'ok', []]],
    ['qwen', 'none', '<think>r</think>ok<tool_call>\n{"name": "add", "argum', False, ['r', 'ok<tool_call>\n{"name": "add", "argum', []]],
    ['qwen', 'none', '<think>r</think>ok<|im_end|>', True, ['r', 'ok', []]],
    ['qwen', 'none', '<think>r</think>ok<|im_end|>', False, ['r', 'ok', []]],
    ['qwen', 'none', 'before<think>mid</think>after<think>again</think>end', True, ['midagain', 'beforeafterend', []]],
    ['qwen', 'none', 'before<think>mid</think>after<think>again</think>end', False, ['midagain', 'beforeafterend', []]],
    ['qwen', 'none', '<think>r</th', True, ['r</th', None, []]],
    ['qwen', 'none', '<think>r</th', False, ['r</th', None, []]],
    ['qwen', 'none', 'answer</think>', True, [None, 'answer</think>', []]],
    ['qwen', 'none', 'answer</think>', False, [None, 'answer</think>', []]],
    ['qwen', 'none', '', True, [None, None, []]],
    ['qwen', 'none', '', False, [None, None, []]],
    ['qwen', 'qwen_think_open', '<think>plan it</think>\n\nThe answer.', True, ['<think>plan it', '\n\nThe answer.', []]],
    ['qwen', 'qwen_think_open', '<think>plan it</think>\n\nThe answer.', False, ['<think>plan it', '\n\nThe answer.', []]],
    ['qwen', 'qwen_think_open', '<think>plan</think>\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', True, ['<think>plan', '\n\nLet me check.', [['get_weather', '{"city": "Paris", "days": 3}']]]],
    ['qwen', 'qwen_think_open', '<think>plan</think>\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', False, ['<think>plan', '\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', []]],
    ['qwen', 'qwen_think_open', '<think>a</think><tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', True, ['<think>a', 'after', [['add', '{"a": 1, "b": 2}'], ['get_weather', '{"city": "Zürich"}']]]],
    ['qwen', 'qwen_think_open', '<think>a</think><tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', False, ['<think>a', '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', []]],
    ['qwen', 'qwen_think_open', '<think>unfinished reasoning', True, ['<think>unfinished reasoning', None, []]],
    ['qwen', 'qwen_think_open', '<think>unfinished reasoning', False, ['<think>unfinished reasoning', None, []]],
    ['qwen', 'qwen_think_open', 'still thinking</think>\n\ncontent here', True, ['still thinking', '\n\ncontent here', []]],
    ['qwen', 'qwen_think_open', 'still thinking</think>\n\ncontent here', False, ['still thinking', '\n\ncontent here', []]],
    ['qwen', 'qwen_think_open', 'no markers at all', True, ['no markers at all', None, []]],
    ['qwen', 'qwen_think_open', 'no markers at all', False, ['no markers at all', None, []]],
    ['qwen', 'qwen_think_open', '<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y</think>done', True, ['<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y', 'done', []]],
    ['qwen', 'qwen_think_open', '<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y</think>done', False, ['<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y', 'done', []]],
    ['qwen', 'qwen_think_open', '<think>r</think><tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', True, ['<think>r', None, []]],
    ['qwen', 'qwen_think_open', '<think>r</think><tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', False, ['<think>r', '<tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', []]],
    ['qwen', 'qwen_think_open', '<think>r</think>ok<tool_call>\n{"name": "add", "argum', True, ['<think>r', 'ok', []]],
    ['qwen', 'qwen_think_open', '<think>r</think>ok<tool_call>\n{"name": "add", "argum', False, ['<think>r', 'ok<tool_call>\n{"name": "add", "argum', []]],
    ['qwen', 'qwen_think_open', '<think>r</think>ok<|im_end|>', True, ['<think>r', 'ok', []]],
    ['qwen', 'qwen_think_open', '<think>r</think>ok<|im_end|>', False, ['<think>r', 'ok', []]],
    ['qwen', 'qwen_think_open', 'before<think>mid</think>after<think>again</think>end', True, ['before<think>midagain', 'afterend', []]],
    ['qwen', 'qwen_think_open', 'before<think>mid</think>after<think>again</think>end', False, ['before<think>midagain', 'afterend', []]],
    ['qwen', 'qwen_think_open', '<think>r</th', True, ['<think>r</th', None, []]],
    ['qwen', 'qwen_think_open', '<think>r</th', False, ['<think>r</th', None, []]],
    ['qwen', 'qwen_think_open', 'answer</think>', True, ['answer', None, []]],
    ['qwen', 'qwen_think_open', 'answer</think>', False, ['answer', None, []]],
    ['qwen', 'qwen_think_open', '', True, [None, None, []]],
    ['qwen', 'qwen_think_open', '', False, [None, None, []]],
    ['qwen', 'qwen_think_closed', '<think>plan it</think>\n\nThe answer.', True, ['plan it', '\n\nThe answer.', []]],
    ['qwen', 'qwen_think_closed', '<think>plan it</think>\n\nThe answer.', False, ['plan it', '\n\nThe answer.', []]],
    ['qwen', 'qwen_think_closed', '<think>plan</think>\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', True, ['plan', '\n\nLet me check.', [['get_weather', '{"city": "Paris", "days": 3}']]]],
    ['qwen', 'qwen_think_closed', '<think>plan</think>\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', False, ['plan', '\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>', []]],
    ['qwen', 'qwen_think_closed', '<think>a</think><tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', True, ['a', 'after', [['add', '{"a": 1, "b": 2}'], ['get_weather', '{"city": "Zürich"}']]]],
    ['qwen', 'qwen_think_closed', '<think>a</think><tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', False, ['a', '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>after', []]],
    ['qwen', 'qwen_think_closed', '<think>unfinished reasoning', True, ['unfinished reasoning', None, []]],
    ['qwen', 'qwen_think_closed', '<think>unfinished reasoning', False, ['unfinished reasoning', None, []]],
    ['qwen', 'qwen_think_closed', 'still thinking</think>\n\ncontent here', True, [None, 'still thinking</think>\n\ncontent here', []]],
    ['qwen', 'qwen_think_closed', 'still thinking</think>\n\ncontent here', False, [None, 'still thinking</think>\n\ncontent here', []]],
    ['qwen', 'qwen_think_closed', 'no markers at all', True, [None, 'no markers at all', []]],
    ['qwen', 'qwen_think_closed', 'no markers at all', False, [None, 'no markers at all', []]],
    ['qwen', 'qwen_think_closed', '<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y</think>done', True, ['x <tool_call>{"name": "add", "arguments": {}}</tool_call> y', 'done', []]],
    ['qwen', 'qwen_think_closed', '<think>x <tool_call>{"name": "add", "arguments": {}}</tool_call> y</think>done', False, ['x <tool_call>{"name": "add", "arguments": {}}</tool_call> y', 'done', []]],
    ['qwen', 'qwen_think_closed', '<think>r</think><tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', True, ['r', None, []]],
    ['qwen', 'qwen_think_closed', '<think>r</think><tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', False, ['r', '<tool_call>\n{"name": "add", "arguments": {bad json}}\n</tool_call>', []]],
    ['qwen', 'qwen_think_closed', '<think>r</think>ok<tool_call>\n{"name": "add", "argum', True, ['r', 'ok', []]],
    ['qwen', 'qwen_think_closed', '<think>r</think>ok<tool_call>\n{"name": "add", "argum', False, ['r', 'ok<tool_call>\n{"name": "add", "argum', []]],
    ['qwen', 'qwen_think_closed', '<think>r</think>ok<|im_end|>', True, ['r', 'ok', []]],
    ['qwen', 'qwen_think_closed', '<think>r</think>ok<|im_end|>', False, ['r', 'ok', []]],
    ['qwen', 'qwen_think_closed', 'before<think>mid</think>after<think>again</think>end', True, ['midagain', 'beforeafterend', []]],
    ['qwen', 'qwen_think_closed', 'before<think>mid</think>after<think>again</think>end', False, ['midagain', 'beforeafterend', []]],
    ['qwen', 'qwen_think_closed', '<think>r</th', True, ['r</th', None, []]],
    ['qwen', 'qwen_think_closed', '<think>r</th', False, ['r</th', None, []]],
    ['qwen', 'qwen_think_closed', 'answer</think>', True, [None, 'answer</think>', []]],
    ['qwen', 'qwen_think_closed', 'answer</think>', False, [None, 'answer</think>', []]],
    ['qwen', 'qwen_think_closed', '', True, [None, None, []]],
    ['qwen', 'qwen_think_closed', '', False, [None, None, []]],
    ['qwen_xml', 'none', '<think>hm</think>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', True, ['hm', None, [['get_weather', '{"city": "Paris", "days": 3}']]]],
    ['qwen_xml', 'none', '<think>hm</think>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', False, ['hm', '\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', []]],
    ['qwen_xml', 'none', '<think>hm</think>text only', True, ['hm', 'text only', []]],
    ['qwen_xml', 'none', '<think>hm</think>text only', False, ['hm', 'text only', []]],
    ['qwen_xml', 'none', '<think>unfinished', True, ['unfinished', None, []]],
    ['qwen_xml', 'none', '<think>unfinished', False, ['unfinished', None, []]],
    ['qwen_xml', 'qwen_think_open', '<think>hm</think>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', True, ['<think>hm', None, [['get_weather', '{"city": "Paris", "days": 3}']]]],
    ['qwen_xml', 'qwen_think_open', '<think>hm</think>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', False, ['<think>hm', '\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>', []]],
    ['qwen_xml', 'qwen_think_open', '<think>hm</think>text only', True, ['<think>hm', 'text only', []]],
    ['qwen_xml', 'qwen_think_open', '<think>hm</think>text only', False, ['<think>hm', 'text only', []]],
    ['qwen_xml', 'qwen_think_open', '<think>unfinished', True, ['<think>unfinished', None, []]],
    ['qwen_xml', 'qwen_think_open', '<think>unfinished', False, ['<think>unfinished', None, []]],
    ['gemma', 'none', '<|channel>thought\nthinking here<channel|>Answer<turn|>', True, ['thinking here', 'Answer', []]],
    ['gemma', 'none', '<|channel>thought\nthinking here<channel|>Answer<turn|>', False, ['thinking here', 'Answer', []]],
    ['gemma', 'none', '<|channel>thought\nt<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>', True, ['t', None, [['get_weather', '{"city": "Paris", "days": 3}']]]],
    ['gemma', 'none', '<|channel>thought\nt<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>', False, ['t', '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>', []]],
    ['gemma', 'none', 'plain answer<eos>', True, [None, 'plain answer', []]],
    ['gemma', 'none', 'plain answer<eos>', False, [None, 'plain answer', []]],
    ['gemma', 'none', '<|channel>thought\ncut', True, ['cut', None, []]],
    ['gemma', 'none', '<|channel>thought\ncut', False, ['cut', None, []]],
    ['gemma', 'gemma_turn', '<|channel>thought\nthinking here<channel|>Answer<turn|>', True, ['thinking here', 'Answer', []]],
    ['gemma', 'gemma_turn', '<|channel>thought\nthinking here<channel|>Answer<turn|>', False, ['thinking here', 'Answer', []]],
    ['gemma', 'gemma_turn', '<|channel>thought\nt<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>', True, ['t', None, [['get_weather', '{"city": "Paris", "days": 3}']]]],
    ['gemma', 'gemma_turn', '<|channel>thought\nt<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>', False, ['t', '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>', []]],
    ['gemma', 'gemma_turn', 'plain answer<eos>', True, [None, 'plain answer', []]],
    ['gemma', 'gemma_turn', 'plain answer<eos>', False, [None, 'plain answer', []]],
    ['gemma', 'gemma_turn', '<|channel>thought\ncut', True, ['cut', None, []]],
    ['gemma', 'gemma_turn', '<|channel>thought\ncut', False, ['cut', None, []]],
    ['explicit', 'none', '[THINK]t[/THINK]outside[CALLS]{"name": "add", "arguments": {"a": 1}}[/CALLS]', True, ['t', 'outside', [['add', '{"a": 1}']]]],
    ['explicit', 'none', '[THINK]t[/THINK]outside[CALLS]{"name": "add", "arguments": {"a": 1}}[/CALLS]', False, ['t', 'outside[CALLS]{"name": "add", "arguments": {"a": 1}}[/CALLS]', []]],
    ['explicit', 'none', 'junk[THINK]t[/THINK]more', True, ['t', 'junkmore', []]],
    ['explicit', 'none', 'junk[THINK]t[/THINK]more', False, ['t', 'junkmore', []]],
    ['explicit', 'none', '[THINK]never closed', True, ['never closed', None, []]],
    ['explicit', 'none', '[THINK]never closed', False, ['never closed', None, []]],
    ['each', 'none', '<calls>[{"name": "add", "parameters": {"a": 1}}]</calls>text<|end|><|assis', True, [None, 'text', [['add', '{"a": 1}']]]],
    ['each', 'none', '<calls>[{"name": "add", "parameters": {"a": 1}}]</calls>text<|end|><|assis', False, [None, '<calls>[{"name": "add", "parameters": {"a": 1}}]</calls>text', []]],
]


def template_ctx(template: str, prompt: str, name: str = "hf", **kw) -> ParseContext:
    ids = TOKENIZER.encode(PROMPTS[prompt], add_special_tokens=False).ids if PROMPTS[prompt] else None
    kw = {"tool_choice": "auto", **kw}
    return ParseContext(tools=TOOLS, prompt_token_ids=ids, vocab=QwenVocab(),
                        response_template=TEMPLATES[template], reasoning_parser=name, **kw)


def template_expected(exp: list) -> list:
    return [exp[0], exp[1], [["", n, a] for n, a in exp[2]]]


@pytest.mark.parametrize("name", ["hf", "beam"])
@pytest.mark.parametrize("case", TEMPLATE_CASES)
def test_template_one_shot(name, case):
    template, prompt, text, with_tool, exp = case
    assert run_output(name, template_ctx(template, prompt, name), with_tool, [text]) == template_expected(exp)


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(TEMPLATE_CASES), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_template_chunking(case, cuts):
    template, prompt, text, with_tool, exp = case
    assert run_output("hf", template_ctx(template, prompt), with_tool, split(text, cuts)) == template_expected(exp)


def test_template_tool_choice_none_keeps_tool_regions():
    """Under ``tool_choice="none"`` the tool parser still runs (engine pair) and keeps tool
    regions as content, as vLLM does with tool parsing off."""
    ctx = template_ctx("qwen", "none", tool_choice="none")
    text = '<think>r</think>ok<tool_call>\n{"name": "add", "arguments": {}}\n</tool_call>'
    assert run_output("hf", ctx, True, [text]) == ["r", 'ok<tool_call>\n{"name": "add", "arguments": {}}\n</tool_call>', []]


def vocab_ids(*tokens: str) -> list[int]:
    return [TOKENIZER.token_to_id(t) for t in tokens]


# (template, prompt, chat_template_kwargs, vLLM's is_reasoning_end on the prompt)
ENDED = [
    ("qwen", "none", {}, False),
    ("qwen", "none", {"enable_thinking": False}, True),
    ("qwen", "qwen_think_open", {}, False),
    ("qwen", "qwen_think_closed", {}, True),
    ("gemma", "gemma_turn", {}, False),
    ("each", "none", {}, True),
    ("explicit", "none", {}, False),
]


@pytest.mark.parametrize("name", ["hf", "beam"])
@pytest.mark.parametrize("case", ENDED)
def test_template_reasoning_ended_in_prompt(name, case):
    template, prompt, kwargs, ended = case
    ctx = template_ctx(template, prompt, name, chat_template_kwargs=kwargs)
    cls = registry.get_reasoning_parser(name)
    assert cls.reasoning_ended_in_prompt(ctx.prompt_token_ids or [], ctx) is ended


