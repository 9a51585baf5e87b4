"""MiniMax-M3 ``<mm:think>…</mm:think>``: vLLM's text partition around the first markers.

Without ``thinking_mode: "enabled"``: a leading ``</mm:think>`` is dropped and the rest is
content; else the text before the first ``<mm:think>`` is content, then reasoning up to the
first ``</mm:think>``, then content verbatim. With it (the template opened the block), the
output starts in reasoning unless it has a ``<mm:think>`` of its own. vLLM looks for that
marker anywhere; to stream without holding the whole output, it counts only when it begins
within the first ``START_WINDOW`` characters (real outputs repeat it at the very start).
"""

from __future__ import annotations

from typing import Any, ClassVar

from tokenbridge.parsers.base import ParseContext, ReasoningParser
from tokenbridge.parsers.engine.lexer import token_id
from tokenbridge.parsers.registry import reasoning_parser
from tokenbridge.parsers.engine.lexer import partial_suffix

_START, _END = "<mm:think>", "</mm:think>"


@reasoning_parser("minimax_m3", "minimax-m3", family="minimax_m3")
class MiniMaxM3ReasoningParser(ReasoningParser):
    name = "minimax_m3"
    START_WINDOW: ClassVar[int] = 64
    _PRE, _BEFORE, _REASONING, _AFTER = range(4)

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__(ctx)
        self.prefilled = ctx.kwarg("thinking_mode") == "enabled"
        self.state = self._PRE
        self.buf = ""
        self.seen_start = False

    @classmethod
    def reasoning_ended_in_prompt(cls, prompt_token_ids: list[int], ctx: ParseContext) -> bool:
        """The last ``</mm:think>`` comes after the last ``<mm:think>`` (single-token markers)."""
        start, end = token_id(ctx.vocab, _START), token_id(ctx.vocab, _END)
        for t in reversed(prompt_token_ids):
            if t == end and end is not None:
                return True
            if t == start and start is not None:
                return False
        return False

    def _decide(self, final: bool) -> bool:
        """Leave ``_PRE`` once the beginning of the output settles the rule."""
        buf = self.buf
        if not self.prefilled:
            if buf.startswith(_END):
                self.buf, self.state = buf[len(_END) :], self._AFTER
                return True
            if _END.startswith(buf) and not final:
                return False
            self.state = self._BEFORE
            return True
        i = buf.find(_START, 0, self.START_WINDOW + len(_START))
        if i != -1:
            self.state = self._BEFORE
            return True
        if final or len(buf) >= self.START_WINDOW + len(_START):
            self.state = self._REASONING
            return True
        return False

    def _run(self, final: bool) -> tuple[str, str]:
        r, c = [], []
        if self.state == self._PRE and not self._decide(final):
            return "", ""
        while True:
            buf = self.buf
            if self.state == self._AFTER:
                c.append(buf)
                self.buf = ""
                break
            marker = _START if self.state == self._BEFORE else _END
            out = c if self.state == self._BEFORE else r
            i = buf.find(marker)
            if i == -1:
                keep = 0 if final else partial_suffix(buf, (marker,))
                out.append(buf[: len(buf) - keep])
                self.buf = buf[len(buf) - keep :]
                break
            out.append(buf[:i])
            self.buf = buf[i + len(marker) :]
            if self.state == self._BEFORE:
                self.state, self.seen_start = self._REASONING, True
            else:
                self.state = self._AFTER
        return "".join(r), "".join(c)

    def _empties(self) -> None:
        # vLLM: no block at all gives the output itself as content ("" kept); a block gives
        # its reasoning even when empty, and content only when non-empty.
        if self.seen_start or self.prefilled:
            self.empty_reasoning, self.empty_content = "", None
        else:
            self.empty_reasoning = None
            self.empty_content = None if self.state == self._AFTER else ""

    def feed(self, text: str, token_ids: list[int]) -> tuple[str, str]:
        self.buf += text
        return self._run(False)

    def finish(self) -> tuple[str, str]:
        out = self._run(True)
        self._empties()
        return out

    def snapshot(self) -> Any:
        return [self.state, self.buf, self.seen_start]

    def restore(self, snap: Any) -> None:
        if not (
            isinstance(snap, list)
            and len(snap) == 3
            and snap[0] in range(4)
            and isinstance(snap[1], str)
            and isinstance(snap[2], bool)
        ):
            raise ValueError("bad reasoning parser state")
        self.state, self.buf, self.seen_start = snap
