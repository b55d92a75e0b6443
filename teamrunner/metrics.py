"""The runner's Prometheus metrics, served at ``GET /metrics``.

One ``RunnerMetrics`` per process, on a registry of its own (several
runners in one test process never share counts). Everything that happens in
a call reaches these through the call's ``CallJournal``; the call lifecycle
counts starts, refusals and ends. Labels are bounded: reasons and outcomes
are fixed words, providers are registry names, and team and member labels
are the ids of the teams the runner is given.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Seconds; voice latencies live between tens of milliseconds and a few seconds.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class RunnerMetrics:
    """Every metric the runner exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.calls_active = Gauge("runner_calls_active", "Calls running now.", registry=r)
        self.calls_started = Counter(
            "runner_calls_started", "Calls started, by kind (single, team).", ["kind"], registry=r
        )
        self.calls_refused = Counter(
            "runner_calls_refused",
            "/run requests refused, by reason (invalid, conflict, capacity, draining, "
            "start_failed, too_large, timeout).",
            ["reason"],
            registry=r,
        )
        self.calls_ended = Counter(
            "runner_calls_ended",
            "Calls ended, by reason (stopped, hung_up, idle, ended, failed, shutdown).",
            ["reason"],
            registry=r,
        )
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

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)
