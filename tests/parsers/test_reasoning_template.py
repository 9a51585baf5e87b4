"""``hf``/``beam`` and ``cohere_command3``/``cohere_command4`` reasoning, with and without the
tool parser of the same name behind them.

Expected values: for ``hf``/``beam``, vLLM 0.33's combined ``ResponseTemplateParser`` one-shot
answer (its ``_ResponseStream`` with reasoning parsing on, tool parsing on or off) for the tool
side's templates and prompts (tests/parsers/test_tool_template.py); for Cohere, the
``cohere_melody`` 0.15.3 filter's ``process_full_text`` (presets ``cmd3``/``cmd4``), which is
what vLLM's ``CohereCommandParser.parse`` returns (calls only when a tool parser is configured).
Rows: ``[template, prompt, output, tool parser, [reasoning, content, [[name, arguments]...]]]``
and ``[preset, output, [reasoning, content, [[id, name, arguments]...]]]``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tool_template import PROMPTS, TEMPLATES, TOKENIZER, TOOLS, QwenVocab

from feeding import feed, split
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext
from tokenbridge.parsers.output import OutputParser

registry.load_all()

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

COHERE_CASES = [
    ['cmd3', 'Hello world', [None, 'Hello world', []]],
    ['cmd3', 'plan<|END_THINKING|>answer', [None, 'plananswer', []]],
    ['cmd3', '<|START_THINKING|>think about it<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>', ['think about it', None, [['0', 'get_weather', '{"city": "Paris"}']]]],
    ['cmd3', '<|START_THINKING|>t  <|END_THINKING|>  <|START_RESPONSE|>Hi <co>c</co: 0:[1]> there  <|END_RESPONSE|>', ['t', 'Hi c there', []]],
    ['cmd3', 'abc  <|START_THINKING|>x<|END_THINKING|>def', ['x', 'abcdef', []]],
    ['cmd3', 'abc  <|START_THINKING|>x', ['x', 'abc', []]],
    ['cmd3', '<|START_THINKING|>unfinished', ['unfinished', None, []]],
    ['cmd3', 'reason<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "a", "parameters": {"x": "é"}}]<|END_ACTION|>', [None, 'reason', [['0', 'a', '{"x": "é"}']]]],
    ['cmd3', 'reason<|START_RESPONSE|>resp<|END_RESPONSE|>tail', [None, 'reasonresp', []]],
    ['cmd3', 'reason<|START_TEXT|>txt<|END_TEXT|>', [None, 'reason<|START_TEXT|>txt<|END_TEXT|>', []]],
    ['cmd3', 'r <co>cited</co: 0> more<|END_THINKING|>c <co>x', [None, 'r cited morec x', []]],
    ['cmd3', '<co>open cite<|START_THINKING|>r<|END_THINKING|>z', ['r', 'open citez', []]],
    ['cmd3', '<|START_THINKING|>a<|START_THINKING|>b<|END_THINKING|>c<|END_THINKING|>d', ['ab', 'cd', []]],
    ['cmd3', 'x<|END_RESPONSE|>junk<|START_THINKING|>r<|END_THINKING|>y', ['r', 'xy', []]],
    ['cmd3', '<|START_THINKING|>r<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "a", "parameters": {"x": 1}', ['r', None, [['0', 'a', '{"x": 1}']]]],
    ['cmd3', 'think<|END_THINK', [None, 'think<|END_THINK', []]],
    ['cmd3', '', [None, None, []]],
    ['cmd3', '  \n', [None, None, []]],
    ['cmd4', 'Hello world', ['Hello world', None, []]],
    ['cmd4', 'plan<|END_THINKING|>answer', ['plan', 'answer', []]],
    ['cmd4', '<|START_THINKING|>think about it<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>', ['think about it', None, [['0', 'get_weather', '{"city": "Paris"}']]]],
    ['cmd4', '<|START_THINKING|>t  <|END_THINKING|>  <|START_RESPONSE|>Hi <co>c</co: 0:[1]> there  <|END_RESPONSE|>', ['t', 'Hi c there', []]],
    ['cmd4', 'abc  <|START_THINKING|>x<|END_THINKING|>def', ['abcx', 'def', []]],
    ['cmd4', 'abc  <|START_THINKING|>x', ['abcx', None, []]],
    ['cmd4', '<|START_THINKING|>unfinished', ['unfinished', None, []]],
    ['cmd4', 'reason<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "a", "parameters": {"x": "é"}}]<|END_ACTION|>', ['reason', None, [['0', 'a', '{"x": "é"}']]]],
    ['cmd4', 'reason<|START_RESPONSE|>resp<|END_RESPONSE|>tail', ['reason', 'resp', []]],
    ['cmd4', 'reason<|START_TEXT|>txt<|END_TEXT|>', ['reason', 'txt', []]],
    ['cmd4', 'r <co>cited</co: 0> more<|END_THINKING|>c <co>x', ['r cited more', 'c x', []]],
    ['cmd4', '<co>open cite<|START_THINKING|>r<|END_THINKING|>z', ['open citer', 'z', []]],
    ['cmd4', '<|START_THINKING|>a<|START_THINKING|>b<|END_THINKING|>c<|END_THINKING|>d', ['ab', 'cd', []]],
    ['cmd4', 'x<|END_RESPONSE|>junk<|START_THINKING|>r<|END_THINKING|>y', ['xr', 'y', []]],
    ['cmd4', '<|START_THINKING|>r<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "a", "parameters": {"x": 1}', ['r', None, [['0', 'a', '{"x": 1}']]]],
    ['cmd4', 'think<|END_THINK', ['think<|END_THINK', None, []]],
    ['cmd4', '', [None, None, []]],
    ['cmd4', '  \n', [None, None, []]],
]
COHERE = {"cmd3": "cohere_command3", "cmd4": "cohere_command4"}
COHERE_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def template_ctx(template: str, prompt: str, name: str = "hf", **kw) -> ParseContext:
    ids = TOKENIZER.encode(PROMPTS[prompt], add_special_tokens=False).ids if PROMPTS[prompt] else None
    kw = {"tool_choice": "auto", **kw}
    return ParseContext(tools=TOOLS, prompt_token_ids=ids, vocab=QwenVocab(),
                        response_template=TEMPLATES[template], reasoning_parser=name, **kw)


def cohere_ctx(name: str) -> ParseContext:
    return ParseContext(tools=COHERE_TOOLS, tool_choice="auto", reasoning_parser=name)


def run(name: str, ctx: ParseContext, with_tool: bool, pieces: list[str]) -> list:
    """Feed the pieces through reasoning (+ tool) parser, with a snapshot/restore (through
    msgpack) on fresh parsers between any two of them."""

    def build() -> OutputParser:
        tool = registry.get_tool_parser(name)(ctx) if with_tool else None
        return OutputParser(ctx, registry.get_reasoning_parser(name)(ctx), tool)

    fed = feed(build, pieces, restore=True)
    calls = [[call_id or "", name, args] for call_id, name, args in fed.calls]
    return [fed.reasoning or None, fed.content or None, calls]


def template_expected(exp: list) -> list:
    return [exp[0], exp[1], [["", n, a] for n, a in exp[2]]]


def cohere_expected(exp: list, with_tool: bool) -> list:
    return [exp[0], exp[1], exp[2] if with_tool else []]


@pytest.mark.parametrize("name", ["hf", "beam"])
@pytest.mark.parametrize("case", TEMPLATE_CASES)
def test_template_one_shot(name, case):
    template, prompt, text, with_tool, exp = case
    assert run(name, template_ctx(template, prompt, name), with_tool, [text]) == template_expected(exp)


@pytest.mark.parametrize("with_tool", [True, False])
@pytest.mark.parametrize("case", COHERE_CASES)
def test_cohere_one_shot(case, with_tool):
    preset, text, exp = case
    name = COHERE[preset]
    assert run(name, cohere_ctx(name), with_tool, [text]) == cohere_expected(exp, with_tool)




@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(TEMPLATE_CASES), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_template_chunking(case, cuts):
    template, prompt, text, with_tool, exp = case
    assert run("hf", template_ctx(template, prompt), with_tool, split(text, cuts)) == template_expected(exp)


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(COHERE_CASES), with_tool=st.booleans(), cuts=st.lists(st.integers(0, 300), max_size=8))
def test_cohere_chunking(case, with_tool, cuts):
    preset, text, exp = case
    name = COHERE[preset]
    assert run(name, cohere_ctx(name), with_tool, split(text, cuts)) == cohere_expected(exp, with_tool)


def test_template_tool_choice_none_keeps_tool_regions():
    """Under ``tool_choice="none"`` the tool parser still runs (engine pair) and keeps tool
    regions as content, as vLLM does with tool parsing off."""
    ctx = template_ctx("qwen", "none", tool_choice="none")
    text = '<think>r</think>ok<tool_call>\n{"name": "add", "arguments": {}}\n</tool_call>'
    assert run("hf", ctx, True, [text]) == ["r", 'ok<tool_call>\n{"name": "add", "arguments": {}}\n</tool_call>', []]


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


class CohereVocab:
    """Cohere's marker tokens at made-up ids (the Cohere tokenizer is not in the model folder)."""

    IDS = {"<|START_THINKING|>": 10, "<|END_THINKING|>": 11, "<|CHATBOT_TOKEN|>": 12}

    def token_to_id(self, token: str) -> int | None:
        return self.IDS.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        return {v: k for k, v in self.IDS.items()}.get(token_id)


@pytest.mark.parametrize("name", ["cohere_command3", "cohere_command4"])
@pytest.mark.parametrize(("ids", "ended"), [
    ([1, 12], False),
    ([1, 12, 10], False),
    ([1, 12, 10, 5, 11], True),
    ([1, 11, 12], False),
    ([1, 10, 11, 12, 10, 5], False),
    ([1, 11], True),
    ([], False),
])
def test_cohere_reasoning_ended_in_prompt(name, ids, ended):
    ctx = ParseContext(vocab=CohereVocab())
    assert registry.get_reasoning_parser(name).reasoning_ended_in_prompt(ids, ctx) is ended
