"""The OpenAI error envelope with vLLM's status codes and ``type`` spellings.

Request-validation failures use the HTTP phrase (``"Bad Request"``); errors raised by the
render/derender logic use ``"BadRequestError"``, ``"NotFoundError"``, … as vLLM does.
"""

from __future__ import annotations

import re

import msgspec


class ErrorInfo(msgspec.Struct):
    message: str
    type: str
    param: str | None
    code: int


class ErrorResponse(msgspec.Struct):
    error: ErrorInfo


class ApiError(Exception):
    def __init__(self, message: str, status: int = 400, type: str = "BadRequestError", param: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.param = param

    def envelope(self) -> ErrorResponse:
        return ErrorResponse(ErrorInfo(self.message, self.type, self.param, self.status))


def bad_request(message: str, param: str | None = None, value=None) -> ApiError:
    """vLLM's ``VLLMValidationError``: names the parameter in a suffix when there is one."""
    if param is not None:
        suffix = f" (parameter={param}" + (f", value={value})" if value is not None else ")")
        message = message + suffix
    return ApiError(message, 400, "BadRequestError", param)


def not_found_model(name: str, served: list[str]) -> ApiError:
    return ApiError(
        f"The model `{name}` does not exist. Valid aliases: {', '.join(served)}.",
        404,
        "NotFoundError",
        "model",
    )


def validation_error(loc: str, err_type: str, msg: str) -> ApiError:
    """A pydantic-style request validation error (status 400, type "Bad Request")."""
    body = f"1 validation error:\n  {{'type': '{err_type}', 'loc': '{loc}', 'msg': '{msg}'}}"
    return ApiError(body, 400, "Bad Request", loc)


_AT = re.compile(r" - at `\$(.*)`$")
_MISSING = re.compile(r"Object missing required field `([^`]*)`")


def from_msgspec(err: Exception, prefix: str = "body") -> ApiError:
    """Map a msgspec decode/validation error onto the pydantic-shaped envelope."""
    text = str(err)
    if isinstance(err, msgspec.DecodeError) and not isinstance(err, msgspec.ValidationError):
        return validation_error(prefix, "json_invalid", "JSON decode error")
    m = _AT.search(text)
    path = m.group(1) if m else ""
    msg = text[: m.start()] if m else text
    parts = [p for p in re.split(r"\.|\[|\]", path) if p]
    mm = _MISSING.match(msg)
    if mm:
        parts.append(mm.group(1))
        kind, msg = "missing", "Field required"
    else:
        kind = "value_error"
    loc = ".".join([prefix, *parts])
    return validation_error(loc, kind, msg.replace("'", '"'))
