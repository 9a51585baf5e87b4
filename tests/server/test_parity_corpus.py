"""The whole public parity corpus, through real servers, scored as vLLM's replay tool scores it.

Every kind and every profile of ``shared/parity/cases`` (renders, tokenize, errors, models,
health, one-shot derenders and streams) and of ``shared/parity/cases-api`` (Messages and
Responses renders). A stream passes when its steps get vLLM's statuses and
its chunks add up to vLLM's non-streaming answer; how many streams also match chunk for chunk
is printed at the end of the run, not asserted. One server per profile, several profiles at once.

Everything is replayed with ``--tool-call-streaming whole``, whose streams always add up to the
one-shot answer; the streams are replayed again with ``incremental``, where every output the
corpus does not label malformed must pass too.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import INCREMENTAL, PARITY, PROFILES, WHOLE, malformed_case_ids, replay, streams_incrementally

# The main corpus and the Messages/Responses render corpus, merged per profile.
CORPORA = ("cases", "cases-api")
CASES: dict[str, list[dict]] = {}
for corpus in CORPORA:
    for path in sorted((PARITY / corpus).glob("*.jsonl")):
        CASES.setdefault(path.stem, []).extend(json.loads(line) for line in path.open(encoding="utf-8"))


def replay_case(port: int, case: dict) -> tuple[str | None, bool | None]:
    """(first difference from vLLM or None, per-chunk exact for a stream else None)."""
    if "steps" in case:
        return replay.run_stream(port, case)
    r = case["request"]
    status, body = replay.http(port, r["method"], r["path"], r.get("body"), r.get("raw"))
    return replay.compare_response(case["response"], status, body), None


@pytest.fixture(scope="module")
def results(servers, request) -> dict[str, tuple[str | None, bool | None]]:
    """Case id -> result in whole mode; ``incremental/<id>`` -> a stream's in incremental mode."""
    whole = servers.ports(list(CASES), WHOLE)
    incremental = servers.ports([p for p in CASES if streams_incrementally(p)], INCREMENTAL)

    def run(profile: str) -> dict:
        got = {c["id"]: replay_case(whole[profile], c) for c in CASES[profile]}
        for c in CASES[profile]:
            if "steps" in c:
                # A profile without an incremental parser streams the same in both modes.
                port = incremental.get(profile)
                got[f"incremental/{c['id']}"] = replay_case(port, c) if port else got[c["id"]]
        return got

    out: dict = {}
    with ThreadPoolExecutor(3) as pool:
        for by_case in pool.map(run, CASES):
            out.update(by_case)
    for mode in ("whole", "incremental"):
        streams = [exact for key, (_, exact) in out.items()
                   if exact is not None and key.startswith("incremental/") == (mode == "incremental")]
        setattr(request.config, f"parity_per_chunk_{mode}", (sum(streams), len(streams)))
    return out


def test_every_case_file_has_a_profile():
    assert CASES and set(CASES) <= set(PROFILES), sorted(set(CASES) - set(PROFILES))


@pytest.mark.parametrize(
    "profile,kind",
    sorted({(p, c["kind"]) for p, cases in CASES.items() for c in cases}),
)
def test_corpus_cases_match_vllm(results, profile, kind):
    failures = [
        f"{c['id']}: {results[c['id']][0]}"
        for c in CASES[profile]
        if c["kind"] == kind and results[c["id"]][0] is not None
    ]
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("profile", sorted({p for p, cases in CASES.items() if any("steps" in c for c in cases)}))
def test_well_formed_incremental_streams_match_vllm(results, profile):
    malformed = malformed_case_ids(profile)
    failures = [
        f"{c['id']}: {results['incremental/' + c['id']][0]}"
        for c in CASES[profile]
        if "steps" in c and c["id"] not in malformed and results["incremental/" + c["id"]][0] is not None
    ]
    assert not failures, "\n".join(failures[:10])
