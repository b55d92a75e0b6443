"""How many worker processes the runner starts: ``RUNNER_WORKERS``, or the cores it may use.

A worker is one Python process, and Python runs one thread at a time, so a
worker uses one core; more workers than cores only share the same cores.
The cores the process may use are the ones it may be scheduled on
(``os.sched_getaffinity``), fewer when a CPU quota caps it: a pod with a CPU
limit of 2 on a 64-core node may run on any of the 64, yet gets the time of
2 (the cgroup's ``cpu.max``, or ``cpu.cfs_quota_us`` on cgroup v1).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from teamrunner.config import Settings

CGROUP = Path("/sys/fs/cgroup")


def usable_cores(cgroup: Path = CGROUP) -> int:
    """The cores this process may use: its affinity, capped by a CPU quota if it has one."""
    cores = len(os.sched_getaffinity(0))
    quota = _cpu_quota(cgroup)
    return max(1, min(cores, math.ceil(quota))) if quota else cores


def worker_count(settings: Settings) -> int:
    """``RUNNER_WORKERS``, or when it is unset one worker per usable core."""
    return settings.workers or usable_cores()


def _cpu_quota(cgroup: Path) -> float | None:
    """Cores' worth of CPU time the cgroup allows, or None when it sets no limit."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()  # cgroup v2: "max 100000"
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())  # v1: -1 is no limit
        period_us = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None
