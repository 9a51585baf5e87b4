"""tokenbridge's log: one stderr handler, text or JSON lines, set from vLLM's logging flags.

``--log-level`` (or ``--logging-config.log_level``, or ``$VLLM_LOGGING_LEVEL``) sets the level,
``--logging-config.formatter json`` (or ``$TOKENBRIDGE_LOG_FORMAT=json``) one JSON object a line,
``--log-config-file`` a whole ``dictConfig``. The access log is off unless ``--enable-log-requests``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

log = logging.getLogger("tokenbridge")
_FIELDS = ("request_id", "method", "path", "status", "ms", "client", "worker")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for k in _FIELDS:
            v = getattr(record, k, None)
            if v is not None:
                doc[k] = v
        if record.exc_info:
            doc["traceback"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


class Access:
    """What the server logs per request (``--enable-log-requests``, ``--enable-log-outputs``)."""

    def __init__(self, requests: bool = False, outputs: bool = False, max_len: int | None = None,
                 error_stack: bool = False) -> None:
        self.requests = requests
        self.outputs = outputs
        self.max_len = max_len
        self.error_stack = error_stack

    def clip(self, body: bytes) -> str:
        text = body.decode("utf-8", "replace")
        return text if self.max_len is None else text[: self.max_len]


def setup(args) -> Access:
    """Configure the ``tokenbridge`` logger from the parsed flags; returns the access-log policy."""
    cfg = args.logging_config or {}
    if args.log_config_file:
        from logging.config import dictConfig  # only here: it imports socketserver and pickle (~1 MB)

        with open(args.log_config_file, encoding="utf-8") as f:
            dictConfig(json.load(f))
    else:
        level = args.log_level or cfg.get("log_level") or os.environ.get("VLLM_LOGGING_LEVEL") or "INFO"
        as_json = cfg.get("formatter") == "json" or os.environ.get("TOKENBRIDGE_LOG_FORMAT") == "json"
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            JsonFormatter() if as_json else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        )
        log.handlers[:] = [handler]
        log.setLevel(str(level).upper())
        log.propagate = False
    return Access(
        requests=bool(args.enable_log_requests) and not args.disable_uvicorn_access_log,
        outputs=bool(args.enable_log_outputs),
        max_len=args.max_log_len,
        error_stack=bool(args.log_error_stack),
    )
