"""The chat template's thinking switch: is thinking on, given the request's ``chat_template_kwargs``?

Families read different keys with different defaults; one ``ThinkingSwitch`` row states which,
so a family names its switch instead of writing a predicate. The named switches below are the
spellings vLLM's parsers use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from tokenbridge.parsers.base import ParseContext


@dataclass(frozen=True)
class ThinkingSwitch:
    """Thinking is on when a given key among ``keys`` is truthy (``first``: the first given key
    decides); with none given, ``default`` (a bool or another switch). A key is given when present,
    and not null unless ``null_is_given``. Thinking is off in any case for a ``reasoning_effort``
    (``default_effort`` when missing or empty) among ``off_efforts``."""

    keys: tuple[str, ...] = ("thinking", "enable_thinking")
    default: Union[bool, "ThinkingSwitch"] = True
    null_is_given: bool = False
    first: bool = False
    off_efforts: frozenset[str] = frozenset()
    default_effort: str | None = None

    def __call__(self, kwargs: dict) -> bool:
        if self.off_efforts and (kwargs.get("reasoning_effort") or self.default_effort) in self.off_efforts:
            return False
        given = [kwargs[k] for k in self.keys if k in kwargs and (self.null_is_given or kwargs[k] is not None)]
        if not given:
            return self.default if isinstance(self.default, bool) else self.default(kwargs)
        return bool(given[0]) if self.first else any(map(bool, given))

    def of(self, ctx: ParseContext) -> bool:
        return self(ctx.chat_template_kwargs or {})


ALWAYS_ON = ThinkingSwitch(keys=())
#: Qwen3: ``enable_thinking``, default on (an explicit null is off).
ENABLE_THINKING_DEFAULT_ON = ThinkingSwitch(keys=("enable_thinking",), null_is_given=True)
#: ``enable_thinking``, default off.
ENABLE_THINKING_DEFAULT_OFF = ThinkingSwitch(keys=("enable_thinking",), default=False)
#: GLM, Kimi, Holo2: on unless ``thinking``/``enable_thinking`` is given and both are falsy.
EITHER_FLAG_DEFAULT_ON = ThinkingSwitch()
#: DeepSeek-V3.x: off unless ``thinking`` or ``enable_thinking`` is truthy.
EITHER_FLAG_DEFAULT_OFF = ThinkingSwitch(default=False)
#: DeepSeek-V4: on unless a flag (present, even null) says off; off for ``reasoning_effort: none``.
DEEPSEEK_V4 = ThinkingSwitch(null_is_given=True, off_efforts=frozenset({"none"}))
#: Hunyuan V3: off unless a ``reasoning_effort`` other than ``no_think`` is given.
HUNYUAN_V3 = ThinkingSwitch(keys=(), off_efforts=frozenset({"no_think"}), default_effort="no_think")
#: Hunyuan V4: on unless ``reasoning_effort`` is ``no_think`` (default ``high``).
HUNYUAN_V4 = ThinkingSwitch(keys=(), off_efforts=frozenset({"no_think"}), default_effort="high")
#: Kimi K3: ``thinking`` decides when not null, else ``enable_thinking`` (default on).
KIMI_K3 = ThinkingSwitch(keys=("thinking",), default=ENABLE_THINKING_DEFAULT_ON)
