"""``/metrics``: one exposition per server, summed over its workers (prometheus_client).

With ``--workers N`` the parent points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh folder before it
forks; every worker writes its values there (mmap files, one per process) and any worker's
``/metrics`` reads them all, so successive scrapes agree whichever worker answers. The names are
vLLM's render server's (``http_requests_total``, ``http_request_duration_seconds``,
``http_request_duration_highr_seconds``, ``http_request_size_bytes``, ``http_response_size_bytes``,
``process_*``) plus ``tokenbridge_*`` ones with buckets fit for millisecond routes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

_MULTIPROC = "PROMETHEUS_MULTIPROC_DIR"
# vLLM's (prometheus-fastapi-instrumentator's) buckets, then ours for sub-millisecond routes.
_VLLM_FEW = (0.1, 0.5, 1.0)
_VLLM_HIGHR = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
               7.5, 10.0, 30.0, 60.0)
_FINE = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
_NOT_COUNTED = {"/metrics"}


def share_across_workers() -> str:
    """Before forking workers: a fresh folder every process writes its values to."""
    path = os.environ.get(_MULTIPROC)
    if not path:
        path = tempfile.mkdtemp(prefix="tokenbridge-metrics-")
        os.environ[_MULTIPROC] = path
    return path


def worker_gone(pid: int) -> None:
    """A worker exited: its in-flight gauge leaves the sum (its counters stay)."""
    if os.environ.get(_MULTIPROC):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def remove_shared(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


class Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary

        self.multiprocess = bool(os.environ.get(_MULTIPROC))
        reg = self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter("http_requests_total", "Total number of requests by method, status and handler.",
                                ("method", "status", "handler"), registry=reg)
        self.request_size = Summary("http_request_size_bytes", "Content length of incoming requests by handler.",
                                    ("handler",), registry=reg)
        self.response_size = Summary("http_response_size_bytes", "Content length of outgoing responses by handler.",
                                     ("handler",), registry=reg)
        self.highr = Histogram("http_request_duration_highr_seconds", "Latency with many buckets but no API "
                               "specific labels.", buckets=_VLLM_HIGHR, registry=reg)
        self.duration = Histogram("http_request_duration_seconds", "Latency with only few buckets by handler.",
                                  ("method", "handler"), buckets=_VLLM_FEW, registry=reg)
        self.latency = Histogram("tokenbridge_request_duration_seconds", "Time to answer, by route.",
                                 ("route",), buckets=_FINE, registry=reg)
        self.tokens_rendered = Counter("tokenbridge_tokens_rendered_total", "Prompt token ids produced by render "
                                       "and /tokenize.", ("route",), registry=reg)
        self.tokens_derendered = Counter("tokenbridge_tokens_derendered_total", "Engine token ids turned into "
                                         "answers by derender.", ("route",), registry=reg)
        self.cache = Counter("tokenbridge_cache_lookups_total", "Exact-cache lookups by cache and result "
                             "(hit, miss).", ("cache", "result"), registry=reg)
        self.errors = Counter("tokenbridge_errors_total", "Answers with an error status, by route and status.",
                              ("route", "status"), registry=reg)
        self.in_flight = Gauge("tokenbridge_requests_in_flight", "Requests being answered.",
                               multiprocess_mode="livesum", registry=reg)
        self.start = time.time()

    def observe(self, method: str, path: str, status: int, seconds: float, size_in: int, size_out: int) -> None:
        if path in _NOT_COUNTED:
            return
        self.requests.labels(method, f"{status // 100}xx", path).inc()
        self.request_size.labels(path).observe(size_in)
        self.response_size.labels(path).observe(size_out)
        self.highr.observe(seconds)
        self.duration.labels(method, path).observe(seconds)
        self.latency.labels(path).observe(seconds)
        if status >= 400:
            self.errors.labels(path, str(status)).inc()

    def cache_lookup(self, cache: str, hits: int, misses: int) -> None:
        if hits:
            self.cache.labels(cache, "hit").inc(hits)
        if misses:
            self.cache.labels(cache, "miss").inc(misses)

    def tokens(self, path: str, rendered: int = 0, derendered: int = 0) -> None:
        if rendered:
            self.tokens_rendered.labels(path).inc(rendered)
        if derendered:
            self.tokens_derendered.labels(path).inc(derendered)

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        if not self.multiprocess:
            from prometheus_client import REGISTRY

            return generate_latest(self.registry) + generate_latest(REGISTRY)
        from prometheus_client import CollectorRegistry, multiprocess

        reg = CollectorRegistry()
        multiprocess.MultiProcessCollector(reg)
        reg.register(_FleetProcessCollector(os.environ[_MULTIPROC]))
        return generate_latest(reg)


class _FleetProcessCollector:
    """``process_*`` summed over the workers that wrote to the shared folder, and the parent."""

    def __init__(self, path: str) -> None:
        self.path = path

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        pids = {os.getppid()}
        for name in os.listdir(self.path):
            stem = name.rsplit(".", 1)[0]
            tail = stem.rsplit("_", 1)[-1]
            if tail.isdigit():
                pids.add(int(tail))
        rss = cpu = 0.0
        start = None
        page = os.sysconf("SC_PAGE_SIZE")
        ticks = os.sysconf("SC_CLK_TCK")
        for pid in pids:
            try:
                with open(f"/proc/{pid}/statm") as f:
                    rss += int(f.read().split()[1]) * page
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                cpu += (int(fields[11]) + int(fields[12])) / ticks
                begun = _boot_time() + int(fields[19]) / ticks
                start = begun if start is None else min(start, begun)
            except (OSError, IndexError, ValueError):
                continue
        yield GaugeMetricFamily("process_resident_memory_bytes", "Resident memory size in bytes (all processes).",
                                value=rss)
        yield CounterMetricFamily("process_cpu_seconds_total", "Total user and system CPU time spent in seconds "
                                  "(all processes).", value=cpu)
        if start is not None:
            yield GaugeMetricFamily("process_start_time_seconds", "Start time of the server since unix epoch in "
                                    "seconds.", value=start)


def _boot_time() -> float:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("btime"):
                return float(line.split()[1])
    return 0.0
