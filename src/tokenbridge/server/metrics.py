"""``/metrics``: one exposition per server, summed over its workers (prometheus_client).

With ``--workers N`` the parent points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh folder before it
forks; every worker writes its values there (mmap files, one per process) and any worker's
``/metrics`` reads them all, so successive scrapes agree whichever worker answers. The names are
vLLM's render server's (``http_requests_total``, ``http_request_duration_seconds``,
``http_request_duration_highr_seconds``, ``http_request_size_bytes``, ``http_response_size_bytes``,
``process_*``) plus ``tokenbridge_*`` ones with buckets fit for millisecond routes.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from bisect import bisect_left

from tokenbridge.model.lru import BoundedLRU

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
        import tempfile  # here: one worker never needs it (nor its imports, ~1 MB)

        path = tempfile.mkdtemp(prefix="tokenbridge-metrics-")
        os.environ[_MULTIPROC] = path
    return path


def worker_gone(pid: int) -> None:
    """A worker exited: its in-flight gauge leaves the sum (its counters stay)."""
    if os.environ.get(_MULTIPROC):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def remove_shared(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


class Metrics:
    """The counters, summaries and histograms above, observed off the request path.

    A request adds to plain in-process totals (one dict lookup and a bisect; prometheus_client
    costs ~10 µs a request in locks and label lookups, as much as a short render). The totals
    go into the prometheus_client metrics when ``/metrics`` is scraped and, with workers, at
    most ``FLUSH_S`` after a request (a timer on the event loop), so any worker's scrape, which
    waits ``SETTLE_S`` first, sees every request answered before it began.
    """

    FLUSH_S = 0.05
    SETTLE_S = 0.1

    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get(_MULTIPROC))
        self._prom: _Prometheus | None = None  # built at the first flush: not on the start-up path
        self.in_flight = 0  # requests being answered now (the gauge takes it at each flush)
        # Not yet flushed: (method, route, status) -> [count, seconds, bytes in, bytes out, per-bucket counts]
        self._answers: dict[tuple[str, str, int], list] = {}
        self._tokens: dict[tuple[str, str], int] = {}  # (kind, route) -> ids not yet flushed
        self._lookups_seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # cache -> (hits, misses)
        self._flush_due = False
        self._count_lookups_from_now()
        os.register_at_fork(after_in_child=self._count_lookups_from_now)  # a worker counts its own

    def _count_lookups_from_now(self) -> None:
        for cache in list(BoundedLRU.instances):
            self._lookups_seen[cache] = (cache.hits, cache.misses)

    def observe(self, method: str, path: str, status: int, seconds: float, size_in: int, size_out: int) -> None:
        if path in _NOT_COUNTED:
            return
        key = (method, path, status)
        row = self._answers.get(key)
        if row is None:
            row = self._answers[key] = [0, 0.0, 0, 0, [0] * (len(_BOUNDS) + 1)]
        row[0] += 1
        row[1] += seconds
        row[2] += size_in
        row[3] += size_out
        row[4][bisect_left(_BOUNDS, seconds)] += 1
        if self.multiprocess and not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_later(self.FLUSH_S, self.flush)

    def tokens(self, path: str, rendered: int = 0, derendered: int = 0) -> None:
        if rendered:
            self._tokens[("rendered", path)] = self._tokens.get(("rendered", path), 0) + rendered
        if derendered:
            self._tokens[("derendered", path)] = self._tokens.get(("derendered", path), 0) + derendered

    @property
    def prom(self) -> "_Prometheus":
        if self._prom is None:
            self._prom = _Prometheus()
        return self._prom

    def flush(self) -> None:
        """Move the in-process totals into the prometheus_client metrics (in multiprocess mode,
        the shared files)."""
        self._flush_due = False
        prom = self.prom
        answers, self._answers = self._answers, {}
        tokens, self._tokens = self._tokens, {}
        for (method, route, status), (n, seconds, size_in, size_out, buckets) in answers.items():
            prom.requests.labels(method, f"{status // 100}xx", route).inc(n)
            if status >= 400:
                prom.errors.labels(route, str(status)).inc(n)
            for summary, size in ((prom.request_size, size_in), (prom.response_size, size_out)):
                child = summary.labels(route)
                child._count.inc(n)
                child._sum.inc(size)
            for hist, to_own in ((prom.highr, _TO_HIGHR), (prom.duration.labels(method, route), _TO_FEW),
                                 (prom.latency.labels(route), _TO_FINE)):
                hist._sum.inc(seconds)
                for i, c in enumerate(buckets):
                    if c:
                        hist._buckets[to_own[i]].inc(c)
        for (kind, route), n in tokens.items():
            (prom.tokens_rendered if kind == "rendered" else prom.tokens_derendered).labels(route).inc(n)
        for cache in list(BoundedLRU.instances):
            hits, misses = cache.hits, cache.misses
            seen_hits, seen_misses = self._lookups_seen.get(cache, (0, 0))
            if hits > seen_hits:
                prom.cache.labels(cache.name, "hit").inc(hits - seen_hits)
            if misses > seen_misses:
                prom.cache.labels(cache.name, "miss").inc(misses - seen_misses)
            self._lookups_seen[cache] = (hits, misses)
        prom.in_flight_gauge.set(self.in_flight)

    async def render(self) -> bytes:
        from prometheus_client import generate_latest

        self.flush()
        if not self.multiprocess:
            from prometheus_client import REGISTRY

            return generate_latest(self.prom.registry) + generate_latest(REGISTRY)
        await asyncio.sleep(self.SETTLE_S)  # the other workers' last requests reach the files
        self.flush()
        from prometheus_client import CollectorRegistry, multiprocess

        reg = CollectorRegistry()
        multiprocess.MultiProcessCollector(reg)
        reg.register(_FleetProcessCollector(os.environ[_MULTIPROC]))
        return generate_latest(reg)


class _Prometheus:
    """The prometheus_client metrics, vLLM's names and ours."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary

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
        self.in_flight_gauge = Gauge("tokenbridge_requests_in_flight", "Requests being answered.",
                                     multiprocess_mode="livesum", registry=reg)


def _bucket_map(own: tuple[float, ...]) -> tuple[int, ...]:
    """For each bucket of ``_BOUNDS`` (all the histograms' bounds together), the bucket of a
    histogram with bounds ``own`` (then +Inf) that its values fall into."""
    return tuple(bisect_left(own, b) for b in _BOUNDS) + (len(own),)


_BOUNDS = tuple(sorted(set(_VLLM_FEW) | set(_VLLM_HIGHR) | set(_FINE)))
_TO_FEW, _TO_HIGHR, _TO_FINE = _bucket_map(_VLLM_FEW), _bucket_map(_VLLM_HIGHR), _bucket_map(_FINE)


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
