"""Shared fixtures: the real model folders, the parity corpus, and real servers on loopback.

The corpus and models live in ``shared/`` beside the repository (``TOKENBRIDGE_SHARED``
overrides). Servers are started with the same command line the parity replay uses.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import settings

from tokenbridge.config import ServeConfig

# CI replays the same examples on every run (seeded from each test's name), so a red CI is a
# reproducible failure; a developer's run explores new ones.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENBRIDGE_SHARED", ROOT.parent / "shared")).resolve()
MODELS = SHARED / "models"
PARITY = SHARED / "parity"
# One worker per profile: the suite holds all fifteen servers at once, and the corpus needs no
# second process (tests/server/test_workers.py covers --workers).
SERVER_CMD = (
    f"{sys.executable} -m tokenbridge.cli serve {{model}} --host 127.0.0.1 --port {{port}} --workers 1 "
    "--served-model-name {name} {tool_parser_flags} {reasoning_parser_flags} {extra_flags}"
)


def _load_replay():
    spec = importlib.util.spec_from_file_location("parity_replay", PARITY / "replay.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


replay = _load_replay()


def streaming_flag(mode: str) -> str:
    """The server flag for a ``--tool-call-streaming`` mode."""
    return f"--tool-call-streaming {mode}"


WHOLE, INCREMENTAL = streaming_flag("whole"), streaming_flag("incremental")

# Servers run under libfaketime, pinned to the corpus's date. Preloaded directly, not through
# the ``faketime`` command: that wrapper makes a semaphore named after its pid and leaves it
# behind when it is killed (replay's stop_server SIGTERMs the whole group), and a later wrapper
# that gets the same pid exits 1 at once ("faketime: sem_open: File exists").
LIBFAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), None)
os.environ.setdefault("FAKETIME_DISABLE_SHM", "1")


def server_command() -> tuple[str, bool]:
    """replay.start_server's command template and whether it should wrap it in ``faketime``."""
    if LIBFAKETIME is not None:
        date = shlex.quote(f"@{replay.FAKE_DATE}")
        return f"env LD_PRELOAD={LIBFAKETIME} FAKETIME={date} FAKETIME_DISABLE_SHM=1 {SERVER_CMD}", False
    return SERVER_CMD, shutil.which("faketime") is not None


PROFILES = json.loads((PARITY / "profiles.json").read_text())["profiles"]


#: The corpus labels outputs whose tool markup is malformed or cut short; incremental streams
#: answer those their documented way, not as the one-shot answer.
MALFORMED = re.compile(r"broken=(json|length)\b")


def streams_incrementally(profile: str) -> bool:
    """The profile's tool parser has an incremental variant (else both modes are one path)."""
    from tokenbridge.parsers import registry

    name = PROFILES[profile].get("tool_parser")
    return bool(name) and registry.get_tool_parser(name).incremental is not None


def malformed_case_ids(profile: str) -> set[str]:
    return {c["id"] for c in corpus_cases(profile, {"chat_derender", "chat_derender_stream"})
            if MALFORMED.search(c.get("note", ""))}


def corpus_cases(profile: str, kinds: set[str]) -> list[dict]:
    with open(PARITY / "cases" / f"{profile}.jsonl", encoding="utf-8") as f:
        cases = [json.loads(line) for line in f]
    return [c for c in cases if c["kind"] in kinds]


class Servers:
    """Starts one server per profile on demand and stops them all at the end."""

    def __init__(self) -> None:
        self.running: dict[str, tuple] = {}
        self.log_dir = Path(tempfile.mkdtemp(prefix="tokenbridge-test-"))
        self._locks: dict[str, threading.Lock] = {p: threading.Lock() for p in PROFILES}

    def port(self, profile: str, flags: str = "") -> int:
        """A server for ``profile``, with our own ``flags`` after the replay's command line."""
        if flags == streaming_flag(ServeConfig().tool_call_streaming):
            flags = ""  # the default: one server for both spellings
        key = (profile, flags)
        with self._locks[profile]:
            if key not in self.running:
                cmd, use_ft = server_command()
                # One log folder per flag set: the replay names a server's log by its model.
                log_dir = self.log_dir / (flags.replace(" ", "_").strip("-") or "default")
                log_dir.mkdir(exist_ok=True)
                self.running[key] = replay.start_server(
                    f"{cmd} {flags}", PROFILES[profile], SHARED, use_ft, log_dir
                )
        return self.running[key][1]

    def ports(self, profiles, flags: str = "", concurrency: int = 4) -> dict[str, int]:
        """Starts the servers of ``profiles`` a few at a time (start-up is mostly waiting)."""
        with ThreadPoolExecutor(concurrency) as pool:
            return dict(zip(profiles, pool.map(lambda p: self.port(p, flags), profiles)))

    def stop(self) -> None:
        for proc, _ in self.running.values():
            replay.stop_server(proc)
        self.running.clear()


@pytest.fixture(scope="session")
def servers():
    s = Servers()
    yield s
    s.stop()


def post(port: int, path: str, body) -> tuple[int, object]:
    return replay.http(port, "POST", path, body)


def pytest_terminal_summary(terminalreporter):
    """The corpus replay's secondary score (set on the config by tests/server/test_parity_corpus.py)."""
    for mode in ("whole", "incremental"):
        score = getattr(terminalreporter.config, f"parity_per_chunk_{mode}", None)
        if score:
            terminalreporter.write_line(
                f"parity corpus, {mode} tool-call streaming: per-chunk exact {score[0]}/{score[1]} streams (not asserted)"
            )


def without_vllm_crash(expected: dict) -> dict:
    """A recorded vLLM answer as we give it: where vLLM crashed on bad input (a 5xx), the
    same message as a 400 ``BadRequestError``; any other answer unchanged."""
    if expected["status"] < 500:
        return expected
    error = {**expected["body"]["error"], "type": "BadRequestError", "code": 400}
    return {"status": 400, "body": {"error": error}}
