"""Request decoding with pydantic's lax coercions, so bodies vLLM accepts are accepted here.

vLLM parses the body with ``json.loads`` (NaN/Infinity literals, lone surrogates and huge ints
are valid JSON there), then validates it with pydantic in lax mode: ``"5"``, ``5.0`` and
``true`` are ints, ``0``/``"yes"``/``"off"`` are bools, ints and numeric strings are floats.
msgspec is strict about all of these, so scalars are coerced first, walking the Struct's type
info; anything still wrong is reported by msgspec and mapped onto the pydantic envelope.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any, Union

import msgspec
from msgspec import inspect as mi

from tokenbridge.protocol.errors import ApiError, from_msgspec, validation_error

_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


class BodyParseError(Exception):
    """A body ``json.loads`` cannot even attempt (bad UTF-8, nesting too deep)."""

    BODY = b'{"detail":"There was an error parsing the body"}'


def parse_json(body: bytes) -> Any:
    """The body as Python objects, accepting what ``json.loads`` accepts; 400 json_invalid else."""
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        return json.loads(body)
    except json.JSONDecodeError as e:
        pos = e.pos
    except (UnicodeDecodeError, RecursionError):
        raise BodyParseError from None  # FastAPI's own 400, outside vLLM's envelope
    except ValueError:
        pos = 0
    raise validation_error(f"body.{pos}", "json_invalid", "JSON decode error")


_views: dict[tuple, msgspec.json.Decoder] = {}


def decode_view(body: bytes, typ: type, key: str, key_typ: Any, raw: tuple[str, ...] = ()) -> dict | None:
    """``body``, an object of ``typ``'s fields, decoded in one pass: the field ``key`` straight
    into ``key_typ`` (or null), those in ``raw`` left as ``msgspec.Raw``, the others as
    ``parse_json`` gives them. Keys that are not ``typ``'s fields are dropped: ``convert`` ignores
    them. None when the pass fails (not an object, ``key`` not well typed, JSON only
    ``json.loads`` reads): the caller then parses the body whole.

    A derender's engine output then never exists as dicts and lists (a 2k-token answer with
    top-5 logprobs is ~14k of them, twice the memory of its structs), and is read once
    (splitting the body into fields first, then decoding each, was 7% of that answer)."""
    view_key = (typ, key, key_typ, raw)
    decoder = _views.get(view_key)
    if decoder is None:
        decoder = _views[view_key] = msgspec.json.Decoder(_view_type(typ, key, key_typ, raw))
    try:
        view = decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    unset = msgspec.UNSET
    return {name: value for name in view.__struct_fields__ if (value := getattr(view, name)) is not unset}


def _view_type(typ: type, key: str, key_typ: Any, raw: tuple[str, ...]) -> type:
    fields = []
    for f in msgspec.structs.fields(typ):
        name = f.encode_name
        if name == key:
            fields.append((name, Union[key_typ, None, msgspec.UnsetType], msgspec.UNSET))
        elif name in raw:
            fields.append((name, Union[msgspec.Raw, msgspec.UnsetType], msgspec.UNSET))
        else:
            fields.append((name, Any, msgspec.UNSET))
    return msgspec.defstruct(f"{typ.__name__}View", fields)


def decode(body: bytes, typ: type) -> Any:
    """Parse, coerce and convert ``body`` into ``typ`` (a msgspec Struct)."""
    obj = parse_json(body)
    return convert(obj, typ)


def convert(obj: Any, typ: type) -> Any:
    if not isinstance(obj, dict):
        raise validation_error("body", "model_attributes_type", "Input should be a valid dictionary or object")
    try:
        # Well-typed bodies (the common case, with long token-id arrays) convert at C speed;
        # the per-value lax walk below is only for bodies that need coercing or reporting.
        return msgspec.convert(obj, typ)
    except (msgspec.ValidationError, OverflowError, ValueError):
        pass
    obj = coerce(obj, _info(typ), "body")
    try:
        return msgspec.convert(obj, typ, strict=False)
    except msgspec.ValidationError as e:
        raise from_msgspec(e) from None
    except (OverflowError, ValueError) as e:  # e.g. an int too large for a constrained field
        raise validation_error("body", "value_error", str(e)) from None


@lru_cache(maxsize=None)
def _info(typ: type) -> mi.Type:
    return mi.type_info(typ)


def coerce(value: Any, t: mi.Type, loc: str) -> Any:
    """``value`` with pydantic-lax scalar coercions applied where ``t`` asks for a scalar."""
    if isinstance(t, mi.UnionType):
        if value is None and any(isinstance(u, mi.NoneType) for u in t.types):
            return None
        rest = [u for u in t.types if not isinstance(u, mi.NoneType)]
        if len(rest) == 1:
            return coerce(value, rest[0], loc)
        return _coerce_union(value, rest, loc)
    if isinstance(t, mi.IntType):
        return _to_int(value, loc)
    if isinstance(t, mi.FloatType):
        return _to_float(value, loc)
    if isinstance(t, mi.BoolType):
        return _to_bool(value, loc)
    if isinstance(t, mi.ListType) and isinstance(value, list):
        return [coerce(v, t.item_type, f"{loc}.{i}") for i, v in enumerate(value)]
    if isinstance(t, mi.StructType) and isinstance(value, dict):
        out = dict(value)
        for f in t.fields:
            if f.encode_name in out:
                out[f.encode_name] = coerce(out[f.encode_name], f.type, f"{loc}.{f.encode_name}")
        return out
    return value


def _coerce_union(value: Any, types: list[mi.Type], loc: str) -> Any:
    """pydantic's smart union, for the unions in our schemas: an exact type match wins, a list
    takes the list member, and a bool or whole float fits an ``int`` member when nothing
    else does (``stop_reason: int | str``, ``prompt_tokens: list[int] | int``)."""
    kinds = {type(u) for u in types}
    if isinstance(value, list):
        member = next((u for u in types if isinstance(u, mi.ListType)), None)
        return coerce(value, member, loc) if member is not None else value
    if mi.IntType in kinds:
        if type(value) is bool and mi.BoolType not in kinds:
            return int(value)
        if type(value) is float and mi.FloatType not in kinds and math.isfinite(value) and value.is_integer():
            return int(value)
    return value


def token_ids(values: list, loc: str) -> list[int]:
    """A list of non-negative token ids, each coerced as pydantic's lax ``int``."""
    out = []
    for i, v in enumerate(values):
        n = _to_int(v, f"{loc}.{i}")
        if type(n) is not int:
            raise validation_error(f"{loc}.{i}", "int_type", "Input should be a valid integer")
        if n < 0:
            raise validation_error(f"{loc}.{i}", "greater_than_equal", "Input should be greater than or equal to 0")
        out.append(n)
    return out


def _to_int(v: Any, loc: str) -> Any:
    if type(v) is bool:
        return int(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise validation_error(loc, "finite_number", "Input should be a finite number")
        if v != int(v):
            raise validation_error(loc, "int_from_float", "Input should be a valid integer, got a number with a fractional part")
        if not -_INT64 <= v < _INT64:  # pydantic-core turns a float into an i64
            raise validation_error(loc, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size")
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s)
        except ValueError:
            pass
        if _DECIMAL_ZEROS.fullmatch(s):  # "3.0" is 3; "1e3" and "1.5" are not integers
            return int(s.split(".", 1)[0])
        raise validation_error(loc, "int_parsing", "Input should be a valid integer, unable to parse string as an integer")
    return v


_INT64 = 2**63
_DECIMAL_ZEROS = re.compile(r"[+-]?\d+\.0*")


def _to_float(v: Any, loc: str) -> Any:
    if type(v) is bool:
        return float(v)
    if isinstance(v, int):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            raise validation_error(loc, "float_parsing", "Input should be a valid number, unable to parse string as a number") from None
    return v


def _to_bool(v: Any, loc: str) -> Any:
    if type(v) is bool or v is None:
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
    raise validation_error(loc, "bool_parsing", "Input should be a valid boolean, unable to interpret input")


__all__ = ["ApiError", "coerce", "convert", "decode", "parse_json", "token_ids"]
