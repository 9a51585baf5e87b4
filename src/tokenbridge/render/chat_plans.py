"""What a chat request's fields other than its messages decide, kept so a request that repeats
them is not decided again.

``ChatPlans`` keys a plan by the MessagePack of the decoded request (any route's chat request).
``ChatShapes`` keys one by the exact bytes of a chat body's other fields: a body that repeats
them, with a conversation of plain text messages, skips the body's decode and checks too
(``render.chat.render_known_chat``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from tokenbridge.config import ServeConfig
from tokenbridge.model.context import ModelContext
from tokenbridge.model.lru import BoundedLRU
from tokenbridge.protocol.openai import ChatCompletionRequest


class Choices(NamedTuple):
    """What the fields other than the messages decide before the prompt is rendered."""

    requested: int | None  # max_completion_tokens, else max_tokens
    tool_parser: str | None
    tool_choice: Any
    kwargs: dict  # template kwargs
    tools: list[dict] | None  # handed to the template


class Assembly(NamedTuple):
    """What they decide after it: the sampling values (``max_tokens`` is the prompt's) and the
    answer's fixed parts."""

    values: dict
    reasoning_parser: Any  # the class that decides ``reasoning_ended`` from the prompt, or None
    reasoning_ended: bool | None  # when no parser decides it
    reasoning_kwargs: dict | None
    tools: list[dict] | None  # the parse context's
    transfer: tuple[Any, Any]
    stream_options: dict | None


class ChatPlans:
    """Each chat request's choices and assembly, kept per exact value of its fields other than
    ``messages`` and ``request_id``.

    Those fields are what the checks, the tool choice, the template kwargs and the sampling
    values are made of, and most requests repeat them: a conversation resends them with every
    turn, a client with a fixed set-up sends them with every prompt. The key is their
    MessagePack (which keeps int, float and bool apart, and key order), the model's and the
    server config's identity and the route. An entry is kept only once a render passed every
    check it holds, so a request that finds one can only fail on its messages, in the order a
    full render would have failed on them. Nothing in an entry is changed by a render or an
    answer. Bounded by size (an entry is counted at ``ENTRY_BYTES_PER_KEY_BYTE`` times its key:
    the plan holds the same tools, kwargs and values again).
    """

    MAX_BYTES = 1 << 20
    MAX_ENTRIES = 256
    ENTRY_BYTES_PER_KEY_BYTE = 4
    _EXCLUDED = tuple(ChatCompletionRequest.__struct_fields__.index(f) for f in ("messages", "request_id"))

    def __init__(self) -> None:
        self._plans: BoundedLRU[bytes, tuple[ModelContext, ServeConfig, Choices, Assembly]] = BoundedLRU(
            self.MAX_BYTES, self.MAX_ENTRIES, name="chat_plans"
        )

    def key(self, model: ModelContext, cfg: ServeConfig, req: ChatCompletionRequest, origin: str) -> bytes | None:
        fields = list(msgspec.structs.astuple(req))
        for i in self._EXCLUDED:
            fields[i] = None
        try:
            return _pack((id(model), id(cfg), origin, fields))
        except (TypeError, ValueError, OverflowError):
            return None

    def get(self, key: bytes, model: ModelContext, cfg: ServeConfig) -> tuple[Choices, Assembly] | None:
        entry = self._plans.get(key)
        if entry is None or entry[0] is not model or entry[1] is not cfg:
            return None
        return entry[2], entry[3]

    def put(self, key: bytes, model: ModelContext, cfg: ServeConfig, choices: Choices, assembly: Assembly) -> None:
        self._plans.put_many([(key, (model, cfg, choices, assembly), self.ENTRY_BYTES_PER_KEY_BYTE * len(key))])


class ChatShape(NamedTuple):
    """A chat body's fields other than ``messages``, rendered once: the request they decode to
    (with no messages), and what they decided."""

    model: ModelContext
    cfg: ServeConfig
    req: ChatCompletionRequest
    choices: Choices
    assembly: Assembly
    pure: bool  # ``render.chat.renders_purely`` of the request
    content_format: str  # the model's template's
    context: dict  # its variables but the messages (``conversation.template_context``), shared


class KnownBody(NamedTuple):
    """A chat body split for ``ChatShapes``: the key of its other fields, their shape when one
    is kept, and its conversation when every message is plain text."""

    key: tuple
    shape: ChatShape | None
    conversation: list[dict] | None


# Roles whose plain text message every check of the chat schema and of the render passes.
_PLAIN_ROLES = frozenset(("system", "user", "assistant"))
_split = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
# Messages of strings only: a conversation with tool calls or content parts fails at the first
# such message, without decoding the rest of it.
_decode_texts = msgspec.json.Decoder(list[dict[str, str]]).decode


def plain_conversation(raw: bytes) -> list[dict] | None:
    """The messages when each is exactly ``{"role": system|user|assistant, "content": str}``
    (and there is one at least), else None."""
    try:
        messages = _decode_texts(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not messages:
        return None
    for m in messages:
        if len(m) != 2 or "content" not in m or m.get("role") not in _PLAIN_ROLES:
            return None
    return messages


class ChatShapes:
    """Chat plans kept per exact bytes of a body's fields other than ``messages``.

    A body decodes the same way whenever its bytes are the same, so a shape kept from a render
    that passed every check answers for any body with those bytes: what is left to do is the
    conversation's. Only conversations of plain text messages are taken that way: the body
    checks pass them all, they are read as they are given, and they hold no tool calls. Every
    other body (and every error) takes the full render. Bounded as ``ChatPlans``.
    """

    MAX_BYTES = 1 << 20
    MAX_ENTRIES = 256
    ENTRY_BYTES_PER_KEY_BYTE = 4

    def __init__(self) -> None:
        self._shapes: BoundedLRU[tuple, ChatShape] = BoundedLRU(self.MAX_BYTES, self.MAX_ENTRIES, name="chat_shapes")

    def look_up(self, body: bytes, model: ModelContext, cfg: ServeConfig) -> KnownBody | None:
        """``body`` split, or None when it is not a JSON object with ``messages``."""
        try:
            fields = _split(body)
        except (msgspec.DecodeError, RecursionError):
            return None
        raw = fields.pop("messages", None)
        if raw is None:
            return None
        key = (id(model), id(cfg), tuple(fields), tuple(map(bytes, fields.values())))
        shape = self._shapes.get(key)
        if shape is None or shape.model is not model or shape.cfg is not cfg:
            return KnownBody(key, None, None)
        return KnownBody(key, shape, plain_conversation(raw))

    def put(self, key: tuple, shape: ChatShape) -> None:
        size = sum(map(len, key[2])) + sum(map(len, key[3]))
        self._shapes.put_many([(key, shape, self.ENTRY_BYTES_PER_KEY_BYTE * size)])


_pack = msgspec.msgpack.Encoder().encode
chat_plans = ChatPlans()
chat_shapes = ChatShapes()
