"""A choice parser's state taken mid-stream by an earlier build, of every stream-state version
this release reads (``derender.state.READABLE_VERSIONS``), still finishes the stream as this
release's own stream does.

``data/stream_state_v<N>.json`` was recorded with the code that wrote version N: for every tool
parser (whole, and incremental where it had an incremental stream, on output 1 of
``test_chunking_invariance`` and on the outputs well-formed for it), every reasoning parser with
hermes, and the ``required`` and named choices, the choice parser's state after a third and
after two thirds of the output, and what the deltas up to that cut added up to. Version 2 by
the release before version 3; version 3 by the build before the choice parser's state was
typed, on version 2's cases plus the incremental streams added since. Harmony is read from token
ids and is not here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_chunking_invariance import _model, _request
from tokenbridge.config import ServeConfig
from tokenbridge.derender.parsing import build_choice_parser
from tokenbridge.derender.state import READABLE_VERSIONS

RECORDED = {v: json.loads((Path(__file__).parent / "data" / f"stream_state_v{v}.json").read_text())
            for v in sorted(READABLE_VERSIONS)}
CASES = [(v, case) for v, rec in RECORDED.items() for case in rec["cases"]]


def _label(versioned: tuple[int, dict]) -> str:
    version, case = versioned
    mode = "incremental" if case["incremental"] else "whole"
    choice = case["tool_choice"] if isinstance(case["tool_choice"], str) else "named"
    return f"v{version}-{case['tool']}-{case['reasoning']}-{choice}-{mode}-{case['text']}-{case['cut']}"


def _added(parts: list) -> tuple[str, str, dict[int, list]]:
    content = reasoning = ""
    calls: dict[int, list] = {}
    for c, r, tool_calls in parts:
        content += c
        reasoning += r
        for index, name, args in tool_calls:
            call = calls.setdefault(index, ["", ""])
            call[0] += name or ""
            call[1] += args
    return content, reasoning, calls


def _delta(d) -> list:
    return [d.content, d.reasoning, [[c.index, c.name, c.arguments] for c in d.tool_calls]]


@pytest.mark.parametrize("versioned", CASES, ids=_label)
def test_a_recorded_state_finishes_as_this_release_streams(versioned):
    version, case = versioned
    cfg = ServeConfig(tool_call_parser=case["tool"], reasoning_parser=case["reasoning"],
                      enable_auto_tool_choice=True,
                      tool_call_streaming="incremental" if case["incremental"] else "whole")
    req = _request(case["tool_choice"])
    text, cut = RECORDED[version]["texts"][case["text"]], case["cut"]

    def parser():
        return build_choice_parser(_model(), cfg, req, None, streaming=True)

    now = parser()
    first = _delta(now.feed(text[:cut], []))
    assert first == case["sent"], "the recorded first part is this release's too"
    ours = [first, _delta(now.feed(text[cut:], [])), _delta(now.finish().delta)]

    resumed = parser()
    resumed.restore(case["state"])
    theirs = [case["sent"], _delta(resumed.feed(text[cut:], [])), _delta(resumed.finish().delta)]
    assert _added(theirs) == _added(ours)
