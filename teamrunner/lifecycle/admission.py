"""Admission by load: whether this process can carry one more call now.

A runner process runs all its calls on one event loop, so one core bounds
what it can carry. Past a share of that core (``RUNNER_LOAD_THRESHOLD``)
the loop falls behind, and every voice call on it hears gaps; so a call is
admitted only while the process's *projected* load plus the call's own cost
stays within that share. Counting calls instead would refuse a core's worth
of cheap text calls, and admit a core's worth of calls that each run a
local speech model.

The projected load has two parts:

* **Measured**: ``CpuMeter`` reads the process's CPU time every quarter
  second and takes the mean share of a core over the last six seconds,
  leaving out every quarter in which a call was starting. Starting is work
  that does not recur: a hundred text calls at once keep a core busy for a
  second or two, and the first call of a kind imports its provider's SDK;
  counted, they would refuse the calls right behind them. Six seconds is a
  whole turn of a call (the caller speaks, the bot answers), so calls that
  started together, and so speak and listen together, are measured at every
  step of their turns, not at whichever the window happened to catch.
* **Pending**: a call shows in that mean as it runs, a sixth of its cost
  for every second of it the window holds. What does not show yet is added
  at the call's cost (all of it while it starts, then less as the window
  fills with it), so a burst cannot overshoot before the measure catches up.

A call's cost is what ``bench/capacity.py`` measures a call of its kind to
keep a core busy with (``CallCost``): next to nothing for a text call; the
caller's audio (VAD, turn-taking, the STT stream) is most of a voice call's.
A cost only bridges the seconds before the measure sees the call: a machine
with faster cores, or providers whose sockets cost more, show in the measure.

``RUNNER_MAX_CALLS``, when set, is a hard cap on the calls the whole runner
runs, checked as well (for a pool, by its front, ``teamrunner.workers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from teamrunner.responses import CallKind, LoadReport

# How often the meter reads the process's CPU time, and over how long it takes the mean:
# a whole turn of a call (the caller's line, the wait, the bot's answer).
SAMPLE_SECS = 0.25
WINDOW_SECS = 6.0


@dataclass(frozen=True)
class CallCost:
    """The share of one core a call of each kind keeps busy, from ``bench/capacity.py``.

    Measured with the runner on a core of its own and the simulators on the
    other, as the mean share of a core while the calls talk (BENCHMARKS.md,
    section 5): a single AI's voice call 0.052 to 0.063, a three-member
    team's 0.055 to 0.072. A team's costs more than its CPU says: its routers
    add a hop to every frame, and a core running team calls falls behind at
    a lower share of it (section 5), so it is counted at more. The costs of
    text and speaking-only calls are estimates; they are rare, and cheap.
    """

    text: float = 0.002
    speaks: float = 0.015
    voice: float = 0.055
    team_voice: float = 0.08

    def of(self, kind: CallKind) -> float:
        return {
            CallKind.TEXT: self.text,
            CallKind.SPEAKS: self.speaks,
            CallKind.VOICE: self.voice,
            CallKind.TEAM_VOICE: self.team_voice,
        }[kind]


def call_kind(*, hears: bool, speaks: bool, team: bool) -> CallKind:
    """The kind of a call that has caller audio (``hears``), a voice (``speaks``), members."""
    if hears:
        return CallKind.TEAM_VOICE if team else CallKind.VOICE
    return CallKind.SPEAKS if speaks else CallKind.TEXT


class CpuMeter:
    """The process's steady CPU use, as a share of one core.

    The process's CPU time is read every ``SAMPLE_SECS``. An interval during
    which a call was starting (``starting``) is left out: starting a call is
    work that does not recur (and the first call of a kind imports its
    provider's SDK, most of a core for a second). The load is the mean of
    the intervals left over the last ``WINDOW_SECS``, each weighed by its
    length; while starts leave none in the window, the last figure stands,
    and the calls admitted since are counted at their cost instead
    (``Admission``).

    Args:
        cpu_seconds: The process's CPU time so far (every thread's).
        clock: A monotonic clock.
    """

    def __init__(
        self,
        cpu_seconds: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cpu_seconds = cpu_seconds
        self._clock = clock
        # Clean intervals: (end of the interval, its length, the share of a core used in it).
        self._intervals: deque[tuple[float, float, float]] = deque()
        self._last = (clock(), cpu_seconds())
        self._load = 0.0
        self._starts = 0
        self._tainted = False
        self.clean_secs = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Sample on the running event loop until ``close``, from a clean window."""
        self.reset()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._sample_forever())

    def reset(self) -> None:
        """Forget what was measured: the work of warming up is not the calls'."""
        self._intervals.clear()
        self._load = 0.0
        self._tainted = self._starts > 0
        self._last = (self._clock(), self._cpu_seconds())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Leave out of the measure every interval this start overlaps."""
        self._starts += 1
        self._tainted = True
        try:
            yield
        finally:
            self._starts -= 1

    async def _sample_forever(self) -> None:
        while True:
            await asyncio.sleep(SAMPLE_SECS)
            self.sample()

    def sample(self) -> None:
        """Close the interval since the last sample, and keep it if no call was starting."""
        now, cpu = self._clock(), self._cpu_seconds()
        then, cpu_then = self._last
        self._last = (now, cpu)
        clean = not self._tainted and now > then
        self._tainted = self._starts > 0
        if clean:
            self._intervals.append((now, now - then, (cpu - cpu_then) / (now - then)))
            self.clean_secs += now - then
        while self._intervals and self._intervals[0][0] <= now - WINDOW_SECS:
            self._intervals.popleft()
        if self._intervals:
            measured = sum(length for _, length, _ in self._intervals)
            self._load = sum(length * share for _, length, share in self._intervals) / measured

    @property
    def load(self) -> float:
        """The mean share of a core over the window's clean intervals (the last, if none)."""
        return self._load


class Admission:
    """Decides whether this process takes a call, from its load and an optional cap.

    Args:
        threshold: ``RUNNER_LOAD_THRESHOLD`` (0: the load refuses nothing).
        max_calls: ``RUNNER_MAX_CALLS``: a hard cap on calls at once, or None.
        meter: Measures the process's CPU.
        costs: What each kind of call costs.
    """

    def __init__(
        self,
        threshold: float,
        max_calls: int | None,
        meter: CpuMeter | None = None,
        costs: CallCost | None = None,
    ) -> None:
        self.threshold = threshold
        self.max_calls = max_calls
        self.meter = meter or CpuMeter()
        self.costs = costs or CallCost()
        # By call id: (the meter's clean seconds when it came up, or inf while it starts;
        # its cost).
        self._pending: dict[str, tuple[float, float]] = {}

    def refusal(self, kind: CallKind, calls: int) -> str | None:
        """Why a call of ``kind`` would be refused now (``calls`` run already), or None."""
        if self.max_calls is not None and calls >= self.max_calls:
            return f"at capacity: {calls} of {self.max_calls} calls (RUNNER_MAX_CALLS)"
        if not self.threshold:
            return None
        projected = self.projected()
        cost = self.costs.of(kind)
        if projected + cost > self.threshold:
            return (
                f"at capacity: a {kind.value} call would take this worker's load to "
                f"{projected + cost:.2f} of a core, past RUNNER_LOAD_THRESHOLD "
                f"{self.threshold:g}"
            )
        return None

    def admitted(self, call_id: str, kind: CallKind) -> None:
        """Count a call just admitted, while it starts and until the measure can see it."""
        self._pending[call_id] = (math.inf, self.costs.of(kind))

    def started(self, call_id: str) -> None:
        """The call is up: its work shows in the measure as the window fills with it."""
        if call_id in self._pending:
            self._pending[call_id] = (self.meter.clean_secs, self._pending[call_id][1])

    def withdrawn(self, call_id: str) -> None:
        """A call admitted moments ago did not start: it costs nothing."""
        self._pending.pop(call_id, None)

    def pending(self) -> float:
        """What the calls starting, or up too recently, will add that the measure does not show.

        A call up for ``t`` seconds of the measure's time shows in its mean as
        ``t / WINDOW_SECS`` of its cost; the rest is pending.
        """
        now = self.meter.clean_secs
        total = 0.0
        for call_id, (up, cost) in list(self._pending.items()):
            unseen = 1.0 - max(0.0, now - up) / WINDOW_SECS
            if unseen <= 0:
                del self._pending[call_id]
            else:
                total += cost * unseen
        return total

    def projected(self) -> float:
        return self.meter.load + self.pending()

    def report(self, calls: int) -> LoadReport:
        pending = self.pending()
        measured = self.meter.load
        return LoadReport(
            measured=round(measured, 3),
            pending=round(pending, 3),
            projected=round(measured + pending, 3),
            threshold=self.threshold,
            admits={kind: self.refusal(kind, calls) is None for kind in CallKind},
        )
