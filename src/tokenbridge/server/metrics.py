"""A minimal Prometheus text exposition: request counts and latency sums per route."""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict


class Metrics:
    def __init__(self) -> None:
        self.count: dict[tuple[str, str, str], int] = defaultdict(int)
        self.seconds: dict[tuple[str, str], float] = defaultdict(float)
        self.start = time.time()

    def observe(self, method: str, path: str, status: int, seconds: float) -> None:
        self.count[(method, path, f"{status // 100}xx")] += 1
        self.seconds[(method, path)] += seconds

    def render(self) -> str:
        lines = [
            "# HELP http_requests_total Total number of requests by method, status and handler.",
            "# TYPE http_requests_total counter",
        ]
        for (m, p, s), n in sorted(self.count.items()):
            lines.append(f'http_requests_total{{handler="{p}",method="{m}",status="{s}"}} {n}')
        lines += [
            "# HELP http_request_duration_seconds_sum Total seconds spent serving requests.",
            "# TYPE http_request_duration_seconds_sum counter",
        ]
        for (m, p), s in sorted(self.seconds.items()):
            lines.append(f'http_request_duration_seconds_sum{{handler="{p}",method="{m}"}} {s:.6f}')
        ru = resource.getrusage(resource.RUSAGE_SELF)
        lines += [
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
            "# TYPE process_cpu_seconds_total counter",
            f"process_cpu_seconds_total {ru.ru_utime + ru.ru_stime:.2f}",
            "# HELP process_resident_memory_bytes Resident memory size in bytes.",
            "# TYPE process_resident_memory_bytes gauge",
            f"process_resident_memory_bytes {_rss_bytes()}",
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {self.start:.2f}",
        ]
        return "\n".join(lines) + "\n"


def _rss_bytes() -> int:
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0
