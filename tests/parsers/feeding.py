"""Feeding a parser as a stateless stream does, shared by the parser tests."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, NamedTuple

import msgspec

from tokenizers import AddedToken, Tokenizer

from conftest import MODELS
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.parsers import registry
from tokenbridge.parsers.base import Delta, Final, ParseContext
from tokenbridge.parsers.output import OutputParser
from tokenbridge.parsers.families.inkling import MARKERS as INKLING_MARKERS


class Fed(NamedTuple):
    """What the deltas add up to; ``calls`` holds ``(id, name, arguments)`` per call index.
    ``empty_*``: what vLLM's one-shot message holds for a field that came out empty (the
    finished parser's values, or its ``Final``'s)."""

    content: str
    reasoning: str
    calls: list[tuple[str | None, str, str]]
    empty_reasoning: str | None = None
    empty_content: str | None = None

    def named_calls(self) -> list[tuple[str, str]]:
        return [(name, args) for _, name, args in self.calls]

    def message(self) -> tuple[str | None, str | None]:
        """``(reasoning, content)`` as vLLM's one-shot message holds them."""
        return self.reasoning or self.empty_reasoning, self.content or self.empty_content


def as_delta(out: Any) -> Delta:
    """A parser step's output as a Delta: reasoning parsers give ``(reasoning, content)``,
    the choice parser's finish a ``Final``."""
    if isinstance(out, tuple):
        return Delta(content=out[1], reasoning=out[0])
    if isinstance(out, Final):
        return out.delta
    return out


def feed(make: Callable[[], Any], pieces: list[str], restore: bool = False) -> Fed:
    """Feed ``pieces`` then ``finish``. With ``restore``, every step after the first runs on a
    new parser restored from the previous one's msgpack-encoded snapshot."""
    parser = make()
    deltas: list[Delta] = []
    final = None
    for piece in [*pieces, None]:
        if restore and deltas:
            snap = msgspec.msgpack.decode(msgspec.msgpack.encode(parser.snapshot()))
            parser = make()
            parser.restore(snap)
        if piece is not None:
            deltas.append(as_delta(parser.feed(piece, [])))
        else:
            out = parser.finish()
            final = out if isinstance(out, Final) else None
            deltas.append(as_delta(out))
    if final is not None:
        empty = final.empty_reasoning, final.empty_content
    else:
        empty = getattr(parser, "empty_reasoning", None), getattr(parser, "empty_content", None)
    return accumulate(deltas)._replace(empty_reasoning=empty[0], empty_content=empty[1])


def accumulate(deltas: list[Delta]) -> Fed:
    content = reasoning = ""
    calls: dict[int, tuple[str | None, str | None, str]] = {}
    for d in deltas:
        content += d.content
        reasoning += d.reasoning
        for tc in d.tool_calls:
            call_id, name, args = calls.get(tc.index, (None, None, ""))
            assert name is None or tc.name is None, "a call's name arrives once"
            calls[tc.index] = (call_id or tc.id, tc.name if name is None else name, args + tc.arguments)
    return Fed(content, reasoning, [(i, n or "", a) for i, n, a in (calls[k] for k in sorted(calls))])


def split(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at the given offsets (taken modulo its length + 1)."""
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


def parser_cls(name: str):
    """The reasoning parser registered as ``name`` (an alias too)."""
    cls = registry.get_reasoning_parser(name)
    assert cls is not None, f"no reasoning parser {name!r}"
    return cls


@lru_cache(maxsize=None)
def vocab(folder: str) -> HFTokenizer:
    """The real tokenizer of a shared model folder."""
    path = MODELS / folder
    return HFTokenizer(path, json.loads((path / "tokenizer_config.json").read_text()))


def ctx(folder: str = "qwen3", kwargs: dict | None = None, prompt: list[int] | None = None):
    return ParseContext(
        chat_template_kwargs=kwargs or {}, prompt_token_ids=prompt or [], vocab=vocab(folder)
    )


def parse(name: str, text: str, c: ParseContext, chunks: list[str] | None = None):
    """Feed the reasoning parser ``name`` the chunks (restoring from a snapshot between them)
    and return vLLM's ``(reasoning, content)``."""
    cls = parser_cls(name)
    return feed(lambda: cls(c), [text] if chunks is None else chunks, restore=True).message()


#: The Mistral v13, Muse, Kimi K3 and Inkling markers, for one ``marker_vocab`` (loading is slow).
SHARED_MARKERS = (
    *("[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]"),
    *("<|start|>", "<|message|>", "<|eom|>", "<|eot|>"),
    *("<|open|>", "<|close|>", "<|sep|>"),
    *INKLING_MARKERS,
)


@lru_cache(maxsize=None)
def marker_vocab(tokens: tuple[str, ...]) -> HFTokenizer:
    """Qwen3's real tokenizer with ``tokens`` added as special tokens (for families whose
    markers no shared tokenizer has); Qwen3's own for none."""
    if not tokens:
        return vocab("qwen3")
    folder = Path(tempfile.mkdtemp(prefix="marker-vocab-"))
    atexit.register(shutil.rmtree, folder, True)
    tok = Tokenizer.from_file(str(MODELS / "qwen3" / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in tokens])
    tok.save(str(folder / "tokenizer.json"))
    config = json.loads((MODELS / "qwen3" / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder", None)
    return HFTokenizer(folder, config)


def run_tools(name: str, pieces: list[str], tools: list[dict], restore: bool = False, vocab=None, **kw):
    """The tool parser ``name`` fed ``pieces`` (optionally through snapshot/restore between
    chunks): ``(content or None, [(name, arguments)])``."""
    kw.setdefault("tool_choice", "auto")
    c = ParseContext(tools=tools, vocab=vocab, **kw)
    fed = feed(lambda: registry.get_tool_parser(name)(c), pieces, restore)
    return fed.content or None, fed.named_calls()


def run_output(name: str, ctx: ParseContext, with_tool: bool, pieces: list[str]) -> list:
    """The reasoning parser ``name``, with the tool parser of the same name behind it when
    ``with_tool`` (formats vLLM serves as one combined parser: hf, beam, Cohere), fed ``pieces``
    through snapshot/restore: ``[reasoning or None, content or None, [[id or "", name, args]]]``."""

    def build() -> OutputParser:
        tool = registry.get_tool_parser(name)(ctx) if with_tool else None
        return OutputParser(ctx, registry.get_reasoning_parser(name)(ctx), tool)

    fed = feed(build, pieces, restore=True)
    calls = [[call_id or "", call, args] for call_id, call, args in fed.calls]
    return [fed.reasoning or None, fed.content or None, calls]
