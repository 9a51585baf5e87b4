"""Pythonic tool calls: ``[get_weather(city='Paris'), search(q="x")]`` (Llama 3.2/4, Olmo 3).

vLLM decides on the whole output: it must look like a call list (a fixed pattern anchored at
the start) and parse with Python's ``ast`` as a list of calls with literal keyword arguments;
otherwise the whole output is content. So once the output may be a call list, it is held
until ``finish()``; output that cannot be one streams through as content.

The variants differ only in how the output is normalised before that check, which is data
(``VARIANTS``): Llama 4 may wrap the list in ``<|python_start|>``/``<|python_end|>``, and
Olmo 3 writes one call per line (optionally inside ``<function_calls>``).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from tokenbridge.parsers.base import Delta, ParseContext, ParserState, ToolCallDelta, ToolParser
from tokenbridge.parsers.engine.lexer import partial_suffix
from tokenbridge.parsers.engine.python_calls import PythonCallsState, PythonCallStream
from tokenbridge.parsers.registry import tool_parser

_IDENT = re.compile(r"[a-zA-Z]\w*")
_KWARG_START = re.compile(r"[a-zA-Z]\w*=")
_CLOSE_LIST = re.compile(r"\)\s*\]")
_SPACE = re.compile(r"\s*")
_JSON_NAMES = {"null": None, "true": True, "false": False}


class _NotACall(Exception):
    """The text parses as Python but is not a list of calls with literal arguments."""


def looks_like_call_list(text: str) -> bool:
    """vLLM's call-list pattern, matched at the start of ``text`` (no backtracking blow-up).

    The pattern is ``[`` then calls ``name(...)``; a call whose first argument starts with
    ``key=`` may contain anything, so it matches as soon as a ``)`` followed by optional
    space and ``]`` occurs after that ``=``. Calls without arguments are chained by ``,`` +
    space (only before any call chained by bare space) or by bare space.
    """
    if not text.startswith("["):
        return False
    pos, comma_allowed = 1, True
    while True:
        m = _IDENT.match(text, pos)
        if not m or m.end() >= len(text) or text[m.end()] != "(":
            return False
        pos = m.end() + 1
        kw = _KWARG_START.match(text, pos)
        if kw:
            return _CLOSE_LIST.search(text, kw.end()) is not None
        if pos >= len(text) or text[pos] != ")":
            return False
        pos += 1
        if comma_allowed and text.startswith(",", pos):
            pos = _SPACE.match(text, pos + 1).end()
            continue
        pos = _SPACE.match(text, pos).end()
        if text.startswith("]", pos):
            return True
        comma_allowed = False


def literal_value(node: ast.expr) -> Any:
    """The JSON value of an argument node, as vLLM accepts them (literals, containers, ±n)."""
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, (str, int, float)):
            return node.value
        raise _NotACall("argument is not a JSON value")
    if isinstance(node, ast.Dict):
        if not all(isinstance(k, ast.Constant) for k in node.keys):
            raise _NotACall("dict keys must be literals")
        return {k.value: literal_value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [literal_value(v) for v in node.elts]
    if isinstance(node, ast.JoinedStr) and all(isinstance(p, ast.Constant) for p in node.values):
        return "".join(str(p.value) for p in node.values)
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = literal_value(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    raise _NotACall("argument is not a literal")


def dotted_name(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise _NotACall("call target is not a name")
    parts.append(node.id)
    return ".".join(reversed(parts))


def parse_call_list(text: str) -> list[tuple[str, str]] | None:
    """``[(name, arguments_json), ...]`` when ``text`` is a pythonic call list, else None."""
    if not looks_like_call_list(text):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(text)
        value = getattr(module.body[0], "value", None)
        if not isinstance(value, ast.List) or not all(isinstance(e, ast.Call) for e in value.elts):
            return None
        calls = []
        for call in value.elts:
            name = dotted_name(call.func)
            args = {kw.arg: literal_value(kw.value) for kw in call.keywords}
            calls.append((name, json.dumps(args, ensure_ascii=False)))
        return calls
    except Exception:
        return None


def _strip_python_tags(text: str) -> str:
    start = "<|python_start|>"
    if text.startswith(start):
        return text[len(start):].replace("<|python_end|>", "")
    return text


_FUNCTION_CALLS = re.compile(r"<function_calls>(.*?)</function_calls>", re.DOTALL)


def _lines_as_list(text: str) -> str:
    m = _FUNCTION_CALLS.search(text)
    if m:
        text = m.group(1).strip()
    return "[" + ", ".join(line.strip() for line in text.splitlines() if line.strip()) + "]"


@dataclass(frozen=True)
class Variant:
    """How one model family writes a pythonic call list.

    ``openers``: output starting with one of these may be a call list and is held; other
    output is content at once. ``None`` holds everything (the list may be anywhere).
    ``to_list``: the text vLLM checks. ``fallback``: the content when it is not a call list.
    """

    openers: tuple[str, ...] | None
    to_list: Callable[[str], str]
    fallback: Callable[[str], str]


def _same(text: str) -> str:
    return text


VARIANTS: dict[str, Variant] = {
    "pythonic": Variant(("[",), _same, _same),
    "llama4_pythonic": Variant(("[", "<|python_start|>"), _strip_python_tags, _strip_python_tags),
    "olmo3": Variant(None, _lines_as_list, _same),
}


class PythonicState(ParserState):
    _held: str  # output that may still be a call list
    _content_mode: bool  # it is not one: the rest is content

class PythonicToolParser(ToolParser):
    """Holds output that may be a call list until ``finish()``; streams other output."""

    State = PythonicState

    variant: Variant = VARIANTS["pythonic"]

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._held = ""
        self._content_mode = False

    def _decide(self) -> bool | None:
        """True: hold until finish; False: content; None: too short to tell."""
        openers = self.variant.openers
        if openers is None:
            return True
        if any(self._held.startswith(o) for o in openers):
            return True
        if any(o.startswith(self._held) for o in openers):
            return None
        return False

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        if self._content_mode:
            return Delta(content=text)
        self._held += text
        if not self._held or self._decide() is not False:
            return Delta()
        self._content_mode = True
        out, self._held = self._held, ""
        return Delta(content=out)

    def finish(self) -> Delta:
        text, self._held = self._held, ""
        if not text:
            return Delta()
        calls = parse_call_list(self.variant.to_list(text))
        if calls is None:
            return Delta(content=self.variant.fallback(text))
        return Delta(
            tool_calls=[ToolCallDelta(index=i, name=n, arguments=a) for i, (n, a) in enumerate(calls)]
        )

# Where the incremental parser is.
OPENING, LIST, CONTENT, AFTER_LIST = range(4)
_PYTHON_START, _PYTHON_END = "<|python_start|>", "<|python_end|>"


class StreamedPythonicState(ParserState):
    where: int = OPENING
    held: str = ""  # the text read before the first call opens (the content, should none open)
    strips: bool = False  # the output opened with <|python_start|>: <|python_end|> is removed
    tail: str = ""  # a partial <|python_end|>
    calls: PythonCallsState | None = None


class StreamedPythonicToolParser(ToolParser):
    """``--tool-call-streaming incremental``: the call list read as it is written
    (``engine.python_calls``), each call sent when its ``(`` is read and its arguments as they
    are decided.

    Output that cannot open a list is content at once, as in ``whole`` mode; so is a list that
    breaks before its first call opens (the one-shot answer is the whole text). The documented
    answer for the rest: a list that breaks later keeps the calls sent and the text from the
    byte it could not take is content; a truncated list keeps the calls sent; text after the
    list is dropped (vLLM's stream drops it too).
    """

    variant: Variant = VARIANTS["pythonic"]
    streams_arguments = True
    State = StreamedPythonicState

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self._calls = PythonCallStream()
        self.load(StreamedPythonicState())

    def feed(self, text: str, token_ids: list[int]) -> Delta:
        where = self.where
        if where == CONTENT:
            return Delta(content=self._unwrap(text))
        if where == AFTER_LIST or not text:
            return Delta()
        if where == OPENING:
            self.held += text
            opening = self._opening()
            if opening is None:
                return Delta()
            text, self.held, self.where = self.held, "", LIST
            if not opening:
                self.where = CONTENT
                return Delta(content=text)
            if text.startswith(_PYTHON_START):
                self.strips, text = True, text[len(_PYTHON_START):]
        return self._list(self._unwrap(text))

    def _opening(self) -> bool | None:
        """True: a list may follow; False: content; None: too short to tell."""
        openers = self.variant.openers
        if any(self.held.startswith(o) for o in openers):
            return True
        return None if any(o.startswith(self.held) for o in openers) else False

    def _unwrap(self, text: str) -> str:
        """``text`` without ``<|python_end|>`` once the output opened with ``<|python_start|>``."""
        if not self.strips:
            return text
        text = (self.tail + text).replace(_PYTHON_END, "")
        keep = partial_suffix(text, (_PYTHON_END,))
        self.tail = text[len(text) - keep:]
        return text[: len(text) - keep]

    def _list(self, text: str) -> Delta:
        calls = self._calls
        opened = calls.s.index >= 0
        sent = calls.feed(text)
        if not opened:
            if calls.s.index < 0 and calls.broken is None:
                self.held += text
                return Delta()
            self.held, before = "", self.held + text
        if calls.broken is not None:
            self.where = CONTENT
            return Delta(content=before if calls.s.index < 0 else calls.broken, tool_calls=sent)
        if calls.done:
            self.where = AFTER_LIST
        return Delta(tool_calls=sent)

    def finish(self) -> Delta:
        held, tail = self.held, self.tail
        self.held = self.tail = ""
        if self.where == OPENING or (self.where == LIST and self._calls.s.index < 0):
            return Delta(content=held + tail)
        return Delta(content=tail if self.where == CONTENT else "")

    def snapshot(self) -> StreamedPythonicState:
        self.calls = self._calls.snapshot() if self.where == LIST else None
        return super().snapshot()

    def load(self, state: StreamedPythonicState) -> None:
        super().load(state)
        self._calls = PythonCallStream()
        if self.calls is not None:
            self._calls.load(self.calls)
        self.calls = None


def _register(name: str, *aliases: str, streams: bool = False) -> type[PythonicToolParser]:
    cls = type(
        f"{name.title().replace('_', '')}ToolParser",
        (PythonicToolParser,),
        {"name": name, "variant": VARIANTS[name], "__doc__": PythonicToolParser.__doc__},
    )
    tool_parser(name, *aliases, family="pythonic")(cls)
    if streams:
        cls.incremental = type(f"{cls.__name__.removesuffix('ToolParser')}StreamedCalls",
                               (StreamedPythonicToolParser,),
                               {"name": name, "variant": VARIANTS[name], "__module__": __name__})
    return cls


_register("pythonic", streams=True)
_register("llama4_pythonic", streams=True)
Olmo3ToolParser = _register("olmo3")  # streamed by families/olmo3.py
