"""A parser state of stream-state version 2, taken mid-stream by the previous release, still
finishes the stream as this release's own stream does (version 2 is read for one release).

``data/stream_state_v2.json`` was recorded with the previous release's code: for every tool
parser (whole and incremental, on output 1 of ``test_chunking_invariance`` and on the outputs
well-formed for it), every reasoning parser with hermes, and the ``required`` and named
choices, the choice parser's state after a third and after two thirds of the output, and
what the deltas up to that cut added up to. Harmony is read from token ids and is not here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_chunking_invariance import _model, _request
from tokenbridge.config import ServeConfig
from tokenbridge.derender.parsing import build_choice_parser

RECORDED = json.loads((Path(__file__).parent / "data" / "stream_state_v2.json").read_text())
TEXTS = RECORDED["texts"]
CASES = RECORDED["cases"]


def _label(case: dict) -> str:
    mode = "incremental" if case["incremental"] else "whole"
    choice = case["tool_choice"] if isinstance(case["tool_choice"], str) else "named"
    return f"{case['tool']}-{case['reasoning']}-{choice}-{mode}-{case['text']}-{case['cut']}"


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


@pytest.mark.parametrize("case", CASES, ids=_label)
def test_a_version_2_state_finishes_as_this_release_streams(case):
    cfg = ServeConfig(tool_call_parser=case["tool"], reasoning_parser=case["reasoning"],
                      enable_auto_tool_choice=True,
                      tool_call_streaming="incremental" if case["incremental"] else "whole")
    req = _request(case["tool_choice"])
    text, cut = TEXTS[case["text"]], case["cut"]

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
