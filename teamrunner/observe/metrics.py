"""The runner's Prometheus metrics, served at ``GET /metrics``.

Each worker's load and admission decision (``runner_load``,
``runner_load_threshold``, ``runner_admits``) are read when scraped, not
counted: the exposition is handed them as they are now.

One ``RunnerMetrics`` per process, on a registry of its own (several
runners in one test process never share counts). Everything that happens in
a call reaches these through the call's ``CallJournal``; the call lifecycle
counts starts, refusals and ends. Labels are bounded: reasons and outcomes
are fixed words, providers are registry names, and team and member labels
are the ids of the teams the runner is given.

A pool of worker processes (``teamrunner.workers``) answers ``/metrics`` for
the whole runner from its front. The workers run prometheus-client's
multiprocess mode: each writes its values to files of its own in a
directory the front made, and the front reads them all with
prometheus-client's own ``MultiProcessCollector``. That way a worker that
dies loses nothing it counted (its files stay; only its share of the live
``runner_calls_active`` gauge is dropped), and a scrape never waits on a
busy worker. The front adds what it counts itself (``PoolMetrics``:
requests it refused before any worker saw them, calls lost with a worker,
the workers up), summed into the same series.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from teamrunner.responses import LoadReport

# Seconds; voice latencies live between tens of milliseconds and a few seconds.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class RunnerMetrics:
    """Every metric the runner exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # In a pool, the sum over the workers that are alive.
        self.calls_active = Gauge(
            "runner_calls_active", "Calls running now.", registry=r, multiprocess_mode="livesum"
        )
        self.calls_started = Counter(
            "runner_calls_started", "Calls started, by kind (single, team).", ["kind"], registry=r
        )
        self.calls_refused = _calls_refused(r)
        self.calls_ended = _calls_ended(r)
        self.handoffs = Counter(
            "runner_handoffs",
            "Team handoffs, by team and from/to member.",
            ["team", "from_member", "to_member"],
            registry=r,
        )
        self.handoff_seconds = Histogram(
            "runner_handoff_seconds",
            "From a transition function's call to the next member's first words out.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.tool_calls = Counter(
            "runner_tool_calls",
            "Tool calls to pipecat-manager, by outcome.",
            ["outcome"],
            registry=r,
        )
        self.tool_seconds = Histogram(
            "runner_tool_seconds",
            "Tool call round trips to pipecat-manager.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.user_to_bot_seconds = Histogram(
            "runner_user_to_bot_seconds",
            "From the caller's end of speech to the bot's first audio.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.ttfb_seconds = Histogram(
            "runner_provider_ttfb_seconds",
            "Providers' time to first byte, by provider kind and name.",
            ["kind", "provider"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.provider_errors = Counter(
            "runner_provider_errors",
            "Provider errors, by provider kind and name and by error kind (error, timeout, stall).",
            ["kind", "provider", "error"],
            registry=r,
        )

    def exposition(self, load: Mapping[str, LoadReport]) -> bytes:
        """The metrics in Prometheus' text format, with each worker's ``load`` as it is now."""
        return generate_latest(self.registry) + _load_exposition(load)


def _calls_refused(registry: CollectorRegistry) -> Counter:
    return Counter(
        "runner_calls_refused",
        "/run requests refused, by reason (invalid, conflict, capacity, draining, "
        "start_failed, too_large, timeout, unavailable).",
        ["reason"],
        registry=registry,
    )


def _calls_ended(registry: CollectorRegistry) -> Counter:
    return Counter(
        "runner_calls_ended",
        "Calls ended, by reason (stopped, hung_up, idle, ended, failed, shutdown, bot_ended, "
        "caller_idle, policy_ended, worker_lost).",
        ["reason"],
        registry=registry,
    )


class PoolMetrics:
    """What the front of a worker pool counts itself, and the whole runner's exposition.

    Args:
        workers_dir: The directory the workers write their multiprocess files in.
    """

    def __init__(self, workers_dir: str) -> None:
        self.workers_dir = workers_dir
        self.registry = CollectorRegistry()
        r = self.registry
        self.calls_refused = _calls_refused(r)
        self.calls_ended = _calls_ended(r)
        self.workers_up = Gauge(
            "runner_workers_up", "Worker processes taking calls now.", registry=r
        )
        self.worker_exits = Counter(
            "runner_worker_exits",
            "Worker processes that ended while the runner was not draining.",
            registry=r,
        )

    def exposition(self, load: Mapping[str, LoadReport]) -> bytes:
        """Every worker's metrics and the front's own, summed, in Prometheus' text format.

        ``load`` is each worker's load as it last reported it.
        """
        files = glob.glob(os.path.join(self.workers_dir, "*.db"))
        merged = CollectorRegistry()
        merged.register(_Summed([*MultiProcessCollector.merge(files), *self.registry.collect()]))
        return generate_latest(merged) + _load_exposition(load)


def _load_exposition(load: Mapping[str, LoadReport]) -> bytes:
    """Each worker's load and admission decision, as gauges labelled by its index."""
    registry = CollectorRegistry()
    registry.register(_LoadCollector(load))
    return generate_latest(registry)


class _LoadCollector:
    """``runner_load`` and admission's decision, by worker (``lifecycle.admission``)."""

    def __init__(self, load: Mapping[str, LoadReport]) -> None:
        self._load = load

    def collect(self) -> Iterator[Metric]:
        share = GaugeMetricFamily(
            "runner_load",
            "A worker's load as a share of one core: measured (median CPU over the last "
            "seconds), pending (calls too new to show in it) and projected (their sum).",
            labels=["worker", "part"],
        )
        threshold = GaugeMetricFamily(
            "runner_load_threshold",
            "RUNNER_LOAD_THRESHOLD: the projected load past which a call is refused (0: off).",
            labels=["worker"],
        )
        admits = GaugeMetricFamily(
            "runner_admits",
            "Whether a worker would admit a call of each kind now (1) or answer 503 (0).",
            labels=["worker", "kind"],
        )
        for worker, report in sorted(self._load.items()):
            share.add_metric([worker, "measured"], report.measured)
            share.add_metric([worker, "pending"], report.pending)
            share.add_metric([worker, "projected"], report.projected)
            threshold.add_metric([worker], report.threshold)
            for kind, admitted in report.admits.items():
                admits.add_metric([worker, kind.value], 1.0 if admitted else 0.0)
        yield from (share, threshold, admits)


class _Summed:
    """Metric families with equal names summed, sample by sample (equal name and labels).

    ``_created`` samples are left out: the workers' multiprocess files hold none,
    and a sum of creation times means nothing.
    """

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        summed: dict[str, Metric] = {}
        values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
        for family in self._families:
            if family.name not in summed:
                summed[family.name] = Metric(family.name, family.documentation, family.type)
                values[family.name] = {}
            into = values[family.name]
            for sample in family.samples:
                if sample.name.endswith("_created"):
                    continue
                key = (sample.name, tuple(sorted(sample.labels.items())))
                into[key] = into.get(key, 0.0) + sample.value
        for name, family in summed.items():
            for (sample_name, labels), value in values[name].items():
                family.add_sample(sample_name, dict(labels), value)
            yield family
