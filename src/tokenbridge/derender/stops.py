"""Where generation stopped: the stop token to drop and the stop string to cut at."""

from __future__ import annotations

import sys
from typing import Any


def drop_stop_token(
    token_ids: list[int],
    finish_reason: str | None,
    stop_reason: Any,
    request: Any,
    eos_token_id: int | None,
    model_eos_ids: frozenset[int],
) -> tuple[list[int], Any]:
    """Leave out the token that ended generation (unless include_stop_str_in_output).

    Returns the ids to decode and the ``stop_reason``, which becomes the token id when the
    stop was a non-primary EOS or a request stop token.
    """
    if finish_reason != "stop" or isinstance(stop_reason, str) or not token_ids:
        return token_ids, stop_reason
    last = token_ids[-1]
    if stop_reason is None:
        honor_eos = request is None or not request.ignore_eos
        if honor_eos and last == eos_token_id:
            stopped = True
        elif (request is not None and last in (request.stop_token_ids or ())) or (honor_eos and last in model_eos_ids):
            stopped, stop_reason = True, last
        else:
            stopped = False
    else:
        stopped = last == stop_reason
    if not stopped or (request is not None and request.include_stop_str_in_output):
        return token_ids, stop_reason
    return token_ids[:-1], stop_reason


def stop_strings(request: Any) -> list[str]:
    if request is None or not request.stop:
        return []
    stop = request.stop
    return [stop] if isinstance(stop, str) else [s for s in stop if s]


def find_stop_string(text: str, new_chars: int, stops: list[str], include: bool) -> tuple[str, int] | None:
    """The stop string that completes earliest in the last ``new_chars`` characters, and the
    length to cut the text to (-1: keep all)."""
    if not new_chars or not stops:
        return None
    best, best_index, best_end = None, 0, sys.maxsize
    for s in stops:
        i = text.find(s, max(0, len(text) + 1 - new_chars - len(s)))
        if i == -1:
            continue
        end = i + len(s)
        if end < best_end:
            best, best_index, best_end = s, i, end
    if best is None:
        return None
    if include:
        return best, (-1 if best_end >= len(text) else best_end)
    return best, best_index
