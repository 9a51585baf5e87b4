"""minijinja for the chat templates it renders byte for byte as Jinja2 does.

A short chat's render is mostly the template: Jinja2 runs it as Python, minijinja (Rust) in
about a third of the instructions. The two engines agree on most of what chat templates do but
not on all of it (minijinja iterates ``none`` as empty, formats some values its own way, and
its ``str`` methods know Unicode whitespace, not Python's), so a template is rendered by
minijinja only when its source is one of ``VERIFIED``: templates whose every construct was
checked to mean the same in both, and that ``tests/model/test_fast_template.py`` renders
through both engines over generated conversations (odd roles, missing and null fields, tool
calls, template kwargs) and the corpus, byte for byte. Every other template is Jinja2's alone.

Where the engines could still part, minijinja is made to fail rather than answer: undefined
values may only be tested (``semi_strict``), a printed value must be a string, the filters
and functions are the Jinja2 environment's own Python ones, given only values minijinja
passes on unchanged (strings, booleans, the context's own dicts and lists), and an output with
U+FFFD (which minijinja puts where a lone surrogate was) is not taken. Any failure is
answered by Jinja2 (its output or its error), so an error reads exactly as vLLM's.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, NamedTuple

from tokenbridge.model.lru import BoundedLRU


class Verified(NamedTuple):
    origin: str  # where the template comes from
    content_format: str  # vLLM's detected content format, so Jinja2 need not parse it


#: SHA-256 of each verified template source -> what is known of it (the test pins both).
VERIFIED: dict[str, Verified] = {
    "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5":
        Verified("Qwen3 (Qwen/Qwen3-*, templates/qwen3.jinja)", "string"),
}

# source -> its minijinja renderer, or False when it is not verified (or does not compile);
# bounded by source size, as compiled Jinja2 templates are (a request may bring its own).
_verdicts: BoundedLRU[str, Callable[[dict], str] | bool] = BoundedLRU(1 << 20)


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def content_format(source: str) -> str | None:
    """The recorded content format of a verified template, else None."""
    known = VERIFIED.get(_digest(source))
    return None if known is None else known.content_format


def renderer(source: str, filters: dict[str, Callable], functions: dict[str, Callable]) -> Callable[[dict], str] | None:
    """minijinja's render of ``source`` when it is verified (and minijinja imports), else None."""
    found = _verdicts.get(source)
    if found is None:
        found = (_digest(source) in VERIFIED and _compile(source, filters, functions)) or False
        _verdicts.put_many([(source, found, len(source))])
    return found or None


# What minijinja hands Python as it was given: strings, booleans and the very dict and list
# objects of the context. A number may not be (it passes ``1.0`` on as ``1``), nor ``None``
# (an undefined value arrives as ``None``).
_FAITHFUL = (str, bool, dict, list)


def _printable(value: Any) -> Any:
    """Only strings are printed alike (minijinja prints ``1.0`` as ``1``); anything else makes
    minijinja fail, so Jinja2 prints it."""
    if type(value) is str:
        return value
    raise TypeError(f"minijinja does not print a {type(value).__name__}")


def _faithful(f: Callable) -> Callable:
    """``f`` called only with arguments minijinja passes on unchanged (keywords may be ints:
    template constants such as ``tojson(indent=2)``)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        for a in args:
            if type(a) not in _FAITHFUL:
                raise TypeError(f"minijinja may have changed a {type(a).__name__}")
        for a in kwargs.values():
            if type(a) not in _FAITHFUL and type(a) is not int:
                raise TypeError(f"minijinja may have changed a {type(a).__name__}")
        return f(*args, **kwargs)

    return call


def _compile(source: str, filters: dict[str, Callable], functions: dict[str, Callable]) -> Callable[[dict], str] | None:
    try:
        import minijinja
    except ImportError:
        return None
    env = minijinja.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, pycompat=True)
    env.undefined_behavior = "semi_strict"
    env.finalizer = _printable
    for name, f in filters.items():
        env.add_filter(name, _faithful(f))
    for name, f in functions.items():
        env.add_function(name, _faithful(f))
    try:
        env.add_template("chat", source)
    except minijinja.TemplateError:
        return None
    render = env.render_template

    def render_chat(context: dict) -> str:
        text = render("chat", **context)
        if "\ufffd" in text:  # maybe a lone surrogate minijinja replaced; Jinja2 keeps it
            raise ValueError("U+FFFD in minijinja's output")
        return text

    return render_chat
