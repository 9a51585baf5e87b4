"""``hf``/``beam``: response-template tool parsing, one-shot and chunked.

Expected values are vLLM 0.33's non-streaming ``ResponseTemplateParser`` answers (tool
parser only, no reasoning parser) for the same template, prompt and output, recorded with
vLLM's own stream classes. Templates: Qwen 3 (JSON calls, regex delimiters), Qwen 3.5
(``xml-inline`` calls with a captured name), Gemma 4 (lax JSON with custom string
delimiters, literal-list closer), a template whose fields all have openers (a content sink
is added) and one with ``transform_each`` and a closer ending in the start anchor.
"""

from __future__ import annotations

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import feed
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.engine.template import TemplateError
from conftest import MODELS

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


def run(name: str, ctx: ParseContext, pieces: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
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
    assert run(name, context(template, prompt, choice, with_tools), [text]) == (content, calls)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_chunking_accumulates_to_one_shot(data):
    template, prompt, choice, with_tools, text, content, calls = data.draw(st.sampled_from(CASES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assert run("hf", context(template, prompt, choice, with_tools), pieces) == (content, calls)


def test_parse_context_gets_response_template_from_tokenizer_config():
    ctx = context("qwen", "none", "auto", True)
    assert ctx.response_template is QWEN


def test_unservable_template_is_rejected_and_a_missing_one_leaves_content():
    cls = registry.get_tool_parser("hf")
    text = '<tool_call>{"name": "add", "arguments": {}}</tool_call>  '
    assert run("hf", ParseContext(tools=TOOLS, tool_choice="auto"), [text]) == (text, [])
    bad = {"start_anchor": "A", "fields": {"summary": {"open": "<s>", "close": "</s>"}}}
    with pytest.raises(TemplateError):
        cls(ParseContext(tools=TOOLS, tool_choice="auto", response_template=bad))


def test_reasoning_parser_in_front_consumed_the_open_thinking():
    """With ``--reasoning-parser hf`` the thinking the prompt opened is gone from the text."""
    ctx = context("qwen", "qwen_think_open", "auto", True, reasoning_parser="hf")
    text = '\n\nSure.<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert run("hf", ctx, [text]) == ("\n\nSure.", [("add", '{"a": 1, "b": 2}')])


def test_registry_flags():
    for name in ("hf", "beam"):
        cls = registry.get_tool_parser(name)
        assert cls.engine_based and not cls.supports_required_and_named
        assert not cls.blank_content_is_null
