"""A call's journal: what happened in it, kept for its summary and counted in the metrics.

Everything worth knowing about a call passes through its ``CallJournal``:
handoffs (from the team's flow), tool calls (from the tool bridge), the
caller's waits, providers' time to first byte and their errors (from the
call's observer), the remote policy's decisions and the disposition it
ended the call with (from ``policy.control``). The journal keeps the
per-call figures that make the one-line summary logged when the call ends,
and adds each event to the process's metrics as it happens. It does not
keep which member has the call: the flow does (``team_flow.TeamFlow``).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from teamrunner.observe.metrics import RunnerMetrics
from teamrunner.plan import CallPlan, MemberPlan


class EndReason(StrEnum):
    """Why a call ended: the label of ``runner_calls_ended_total``."""

    STOPPED = "stopped"  # pipecat-manager called /stop
    HUNG_UP = "hung_up"  # pipecat-manager closed a socket
    IDLE = "idle"  # nobody spoke for RUNNER_SESSION_IDLE_SECS
    ENDED = "ended"  # the pipeline ended itself
    FAILED = "failed"  # the pipeline failed
    START_FAILED = "start_failed"  # it never came up
    SHUTDOWN = "shutdown"  # the runner drained and the call was still up
    BOT_ENDED = "bot_ended"  # the model called end_call and its goodbye was heard
    CALLER_IDLE = "caller_idle"  # the caller stayed silent through every idle nudge
    POLICY_ENDED = "policy_ended"  # the remote policy answered end and its last line was heard


@dataclass
class CallJournal:
    """The record of one call."""

    plan: CallPlan
    metrics: RunnerMetrics
    started_at: float = field(default_factory=time.monotonic)
    members_visited: list[str] = field(default_factory=list)
    handoffs: int = 0
    tools: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    user_to_bot: list[float] = field(default_factory=list)
    end_reason: str | None = None
    end_detail: str | None = None
    policy_decisions: Counter[str] = field(default_factory=Counter)
    disposition: str | None = None
    _handoff_started: float | None = None

    def __post_init__(self) -> None:
        self.members_visited.append(self.plan.start_member_id)

    def handoff(self, previous: MemberPlan, target: MemberPlan) -> None:
        """The call moved from ``previous`` to ``target``."""
        self.handoffs += 1
        self.members_visited.append(target.id)
        self._handoff_started = time.monotonic()
        self.metrics.handoffs.labels(self.plan.team_id, previous.id, target.id).inc()

    def ending(self, reason: str, detail: str) -> None:
        """The call ends itself for ``reason`` (the first reason given stands)."""
        if self.end_reason is None:
            self.end_reason = reason
            self.end_detail = detail

    def bot_output(self) -> None:
        """The bot's words reached pipecat-manager: ends a handoff's wait, if one is pending."""
        if self._handoff_started is not None:
            self.metrics.handoff_seconds.observe(time.monotonic() - self._handoff_started)
            self._handoff_started = None

    def tool(self, outcome: str, seconds: float) -> None:
        self.tools[outcome] += 1
        self.metrics.tool_calls.labels(outcome).inc()
        self.metrics.tool_seconds.observe(seconds)

    def policy_decided(self, outcome: str) -> None:
        """The remote policy answered a tool call: an action, or ``error`` when it failed."""
        self.policy_decisions[outcome] += 1

    def caller_waited(self, seconds: float) -> None:
        """From the caller's end of speech to the bot's first audio."""
        self.user_to_bot.append(seconds)
        self.metrics.user_to_bot_seconds.observe(seconds)

    def ttfb(self, kind: str, provider: str, seconds: float) -> None:
        self.metrics.ttfb_seconds.labels(kind, provider).observe(seconds)

    def provider_error(self, kind: str, provider: str, error: str) -> None:
        self.errors[f"{kind} {error}"] += 1
        self.metrics.provider_errors.labels(kind, provider, error).inc()

    def summary(self) -> dict[str, Any]:
        """The call in one record: the fields of its last log line."""
        p50 = statistics.median(self.user_to_bot) if self.user_to_bot else None
        record: dict[str, Any] = {
            "duration_secs": round(time.monotonic() - self.started_at, 2),
            "members_visited": self.members_visited,
            "handoffs": self.handoffs,
            "tools": dict(self.tools),
            "errors": dict(self.errors),
            "user_to_bot_p50_secs": round(p50, 3) if p50 is not None else None,
        }
        if self.plan.policy is not None:
            record["policy_decisions"] = dict(self.policy_decisions)
            record["disposition"] = self.disposition
        record["end_reason"] = self.end_reason
        return record
