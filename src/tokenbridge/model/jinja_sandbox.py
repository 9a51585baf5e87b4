"""transformers' Jinja2 sandbox for chat templates, without its per-access cost.

An immutable sandbox with the ``generation`` block tag and loop controls; ``model/template.py``
adds HF's filters and globals and imports this module on first use.
"""

from __future__ import annotations

from types import MethodType
from typing import Any

from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class _GenerationTag(Extension):
    """``{% generation %}…{% endgeneration %}`` marks assistant spans; rendering ignores it."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


_MAX_VERDICTS = 4096
# A plain dict has no instance attributes: ``getattr(d, name)`` succeeds exactly for these names.
_DICT_ATTRIBUTES = frozenset(dir(dict))
# The bound methods the sandbox wraps (str.format runs its own sandboxed formatter).
_FORMAT_METHODS = frozenset(("format", "format_map"))
_BUILTIN_METHOD = type("".startswith)
_METHOD_TYPES = (_BUILTIN_METHOD, MethodType)


class _ChatTemplateSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox without its per-access cost, answering exactly as it does.

    Jinja's verdict (private name, internal attribute of a function/frame/type, or a method
    that mutates a known mutable) depends only on the object's type and the attribute name,
    and a chat template asks it for ``message.content``, ``loop.last``, ``ns.x``,
    ``content.startswith`` thousands of times per render: a pair found safe once is then read
    directly (a ``str.format`` value still goes through the sandbox's wrapper). Dict keys are
    looked up directly, and builtin methods (which cannot be marked unsafe) are called
    without the callable check.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._verdicts: dict[tuple[type, str], bool] = {}

    def getattr(self, obj: Any, attribute: str) -> Any:
        # ``message.content`` on a dict: Jinja tries the attribute first and pays for an
        # AttributeError on every lookup; for a plain dict the outcome is known in advance.
        kind = type(obj)
        if kind is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        if self._verdicts.get((kind, attribute)):
            try:
                value = getattr(obj, attribute)
            except AttributeError:
                pass
            else:
                if type(value) not in _METHOD_TYPES or value.__name__ not in _FORMAT_METHODS:
                    return value
        return super().getattr(obj, attribute)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        if type(__obj) is _BUILTIN_METHOD:
            return __context.call(__obj, *args, **kwargs)
        return super().call(__context, __obj, *args, **kwargs)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        key = (type(obj), attr)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = super().is_safe_attribute(obj, attr, value)
            if len(self._verdicts) < _MAX_VERDICTS:
                self._verdicts[key] = verdict
        return verdict


def sandbox() -> ImmutableSandboxedEnvironment:
    """A new chat-template sandbox (no filters or globals of HF's yet)."""
    return _ChatTemplateSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, "jinja2.ext.loopcontrols"],
    )
