"""The harness of the tag-style tool families' tests (qwen3_coder, step5, glm45): one tool list,
each parser's real tokenizer, a feeding helper and the call spellings."""

from __future__ import annotations

import json

from conftest import MODELS
from feeding import feed
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"},
            "metric": {"type": "boolean"}, "ratio": {"type": ["number", "null"]},
            "opts": {"type": "object"}, "ids": {"type": "array", "items": {"type": "integer"}},
        }}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}},
]


def _tok(folder: str) -> HFTokenizer:
    path = MODELS / folder
    return HFTokenizer(path, json.loads((path / "tokenizer_config.json").read_text()))


VOCABS = {"qwen3": _tok("qwen3"), "synthetic-families": _tok("synthetic-families")}
MODEL_OF = {"qwen3_coder": "qwen3", "step5": "qwen3", "glm45": "synthetic-families"}


def tag_ctx(name: str, **kw) -> ParseContext:
    return ParseContext(tools=TOOLS, tool_choice="auto", vocab=VOCABS[MODEL_OF[name]], **kw)


def run(name: str, pieces: list[str], restore: bool = False, **kw) -> tuple[str | None, list]:
    """Feed ``pieces`` (optionally through snapshot/restore between chunks) and accumulate."""
    ctx = tag_ctx(name, **kw)
    fed = feed(lambda: registry.get_tool_parser(name)(ctx), pieces, restore)
    return fed.content or None, fed.named_calls()


def one(name: str, text: str, **kw):
    return run(name, [text], **kw)


def qcall(fn: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={fn}>\n{body}</function>\n</tool_call>"


def gcall(fn: str, **params: str) -> str:
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in params.items())
    return f"<tool_call>{fn}\n{body}</tool_call>"

