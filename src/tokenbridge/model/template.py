"""Chat templates rendered the way transformers' ``apply_chat_template`` renders them.

HF's filters and globals (``tojson`` with its key order and spacing, ``raise_exception``,
``strftime_now``) for both engines: minijinja for the templates verified to render alike
(``model/fast_template.py``), else Jinja2's sandbox (``model/jinja_sandbox.py``), compiled
once per template string.
"""

from __future__ import annotations

import json
import json.encoder
import threading
from collections import OrderedDict
from datetime import datetime
from functools import lru_cache
from typing import Any

import msgspec

from tokenbridge.model import fast_template
from tokenbridge.model.lru import BoundedLRU


class TemplateError(ValueError):
    """The template raised (``raise_exception``) or failed to render."""


def _raise_exception(message: str):
    raise TemplateError(message)


def _json_encoder():
    """``json.dumps(x, ensure_ascii=False)`` without building a ``JSONEncoder`` per call: the
    C encoder it makes, made once (a template's ``tojson`` runs for every tool and tool call).
    No circular-reference check: request JSON cannot be cyclic and the immutable sandbox cannot
    make a cycle, so the marker set it would fill is skipped; everything else is ``dumps``'."""
    make = json.encoder.c_make_encoder
    if make is None:
        return lambda x: json.dumps(x, ensure_ascii=False)
    chunks = make(None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    return lambda x: "".join(chunks(x, 0))


dumps = _json_encoder()


class SharedJSON:
    """JSON texts parsed once and shared by every render that hands the template the same text,
    each with its ``tojson`` remembered.

    A conversation re-sends its earlier tool calls in every request, and the template parses
    (prepare) and re-serializes (``tojson``) each call's arguments every time: equal texts
    give equal objects and equal ``tojson`` output, so both are done once per text. Sharing is
    safe because no render changes these objects: the immutable sandbox refuses every mutating
    method, and render code copies what it changes. Bounded by the characters held; used from
    the template's own thread-pool renders, hence the lock.
    """

    def __init__(self, max_chars: int = 1024 * 1024) -> None:
        self._by_text: OrderedDict[str, list] = OrderedDict()  # text -> [object, tojson or None]
        self._by_id: dict[int, list] = {}
        self._chars = 0
        self._max_chars = max_chars
        self._lock = threading.Lock()

    def parse(self, text: str) -> Any:
        """``json.loads(text)`` (raising as it does); objects and arrays are shared."""
        with self._lock:
            entry = self._by_text.get(text)
            if entry is not None:
                self._by_text.move_to_end(text)
                return entry[0]
        value = json.loads(text)
        if type(value) in (dict, list) and len(text) <= self._max_chars // 16:
            with self._lock:
                if text not in self._by_text:
                    entry = [value, None]
                    self._by_text[text] = entry
                    self._by_id[id(value)] = entry
                    self._chars += len(text)
                    while self._chars > self._max_chars:
                        old, (obj, _) = self._by_text.popitem(last=False)
                        del self._by_id[id(obj)]
                        self._chars -= len(old)
        return value

    def dumped(self, value: Any) -> str:
        """``tojson`` with its defaults, remembered for a shared object (else by value)."""
        entry = self._by_id.get(id(value))
        if entry is None or entry[0] is not value:
            return dumped_by_value(value)
        text = entry[1]
        if text is None:
            text = entry[1] = dumps(value)
        return text


shared_json = SharedJSON()

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode
_dumped: BoundedLRU[bytes, tuple[Any, str]] = BoundedLRU(1 << 20, name="tojson")


def dumped_by_value(value: Any) -> str:
    """``dumps(value)`` remembered by value: every request re-sends its tools, and finding one
    again costs a tenth of ``dumps``. Exact: the MessagePack bytes tell int, float and bool
    apart (and NaN, -0.0, key order), and the value must also ``==`` the plain JSON value those
    bytes decode to, which no set, tuple, Decimal, enum or dataclass does (MessagePack would
    write them as JSON values that ``dumps`` refuses or writes otherwise). Objects and arrays
    only; what MessagePack cannot encode takes ``dumps`` (and its errors)."""
    if type(value) not in (dict, list):
        return dumps(value)
    try:
        key = _pack(value)
    except (TypeError, ValueError, OverflowError):
        return dumps(value)
    hit = _dumped.get(key)
    if hit is not None and hit[0] == value:
        return hit[1]
    text = dumps(value)
    if hit is None:
        _dumped.put_many(((key, (_unpack(key), text), 2 * len(key) + len(text)),))
    return text


def _tojson(x: Any, ensure_ascii: bool = False, indent=None, separators=None, sort_keys: bool = False):
    if not ensure_ascii and indent is None and separators is None and not sort_keys:
        return shared_json.dumped(x)
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


# HF's filters and globals, shared by both engines.
_FILTERS = {"tojson": _tojson}
_FUNCTIONS = {"raise_exception": _raise_exception, "strftime_now": _strftime_now}


@lru_cache(maxsize=1)
def environment() -> Any:
    """The Jinja2 sandbox with HF's filters and globals, imported on first use: a server whose
    template minijinja renders never loads Jinja2."""
    from tokenbridge.model import jinja_sandbox

    env = jinja_sandbox.sandbox()
    env.filters.update(_FILTERS)
    env.globals.update(_FUNCTIONS)
    return env


# Compiled templates, bounded by their source size (a request may bring its own template).
_compiled: BoundedLRU[str, Any] = BoundedLRU(1 << 20)


def compile_template(source: str) -> Any:
    """``source`` compiled by ``environment()`` (a ``jinja2.Template``), once per source."""
    template = _compiled.get(source)
    if template is None:
        template = environment().from_string(source)
        # Its globals as one plain dict: every render copies them into its context, and a
        # ChainMap (Jinja's default) is copied key by key in Python.
        template.globals = dict(template.globals)
        _compiled.put_many([(source, template, len(source))])
    return template


def render(source: str, **context: Any) -> str:
    """The template's output for ``context``: minijinja's where it is verified to be Jinja2's
    (``model/fast_template.py``), else Jinja2's; a minijinja failure is Jinja2's to answer."""
    fast = fast_template.renderer(source, _FILTERS, _FUNCTIONS)
    if fast is not None:
        try:
            return fast(context)
        except Exception:
            pass
    return render_jinja2(source, context)


def render_jinja2(source: str, context: dict[str, Any]) -> str:
    import jinja2

    try:
        return compile_template(source).render(**context)
    except TemplateError:
        raise
    except jinja2.TemplateError as e:
        raise TemplateError(str(e)) from e
