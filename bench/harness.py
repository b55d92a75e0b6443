"""What the benchmarks share: the runner as a process of its own, its CPU and memory, figures.

``RunnerProcess`` starts ``python main.py`` pointed at a simulated cloud and
reads its CPU time and resident memory from ``/proc``, so a figure counts the
runner's work and not the simulators' (which run in the benchmark's own
process). ``percentile`` and ``table`` turn measurements into what is printed.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import platform
import signal
import socket
import statistics
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from simulators.caller import SegmentKind
from simulators.cloud import Cloud
from simulators.manager import Caller, CallRecord

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG = 1


def deployment_environment() -> dict[str, str]:
    """The environment the Dockerfile gives the runner, so a figure is the deployed runner's.

    ``SSL_CERT_DIR`` (and no ``SSL_CERT_FILE``) makes OpenSSL load CA
    certificates lazily from the hashed directory: every HTTPS client a
    provider SDK builds then costs 0.15 ms instead of about 20 ms.
    """
    if Path("/etc/ssl/certs").is_dir():
        return {"SSL_CERT_DIR": "/etc/ssl/certs"}
    return {}


def _die_with_parent() -> None:
    """Have Linux stop the runner if the benchmark dies, so no runner outlives a killed run."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the runner is still stopped on a normal exit


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunnerProcess:
    """``python main.py`` in a process of its own, pointed at ``environment``.

    ``command`` runs another service instead, one that takes its port from
    ``RUNNER_PORT`` and answers ``/ready`` too (``bench.lean_runner``).
    """

    def __init__(
        self,
        environment: Mapping[str, str],
        *,
        log_level: str = "ERROR",
        cores: set[int] | None = None,
        root: Path = ROOT,
        command: Sequence[str] = ("main.py",),
    ) -> None:
        self.port = free_port()
        self._command = tuple(command)
        self._cores = cores
        self._root = root
        self._env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "SSL_CERT_FILE"
            },
            **deployment_environment(),
            # Calls still up when a benchmark ends need no drain.
            "RUNNER_DRAIN_SECS": "1",
            # What a call costs, not what admission would take: a benchmark that
            # measures admission sets RUNNER_LOAD_THRESHOLD itself.
            "RUNNER_LOAD_THRESHOLD": "0",
            # One process unless a benchmark asks for a pool (bench/capacity.py does).
            "RUNNER_WORKERS": "1",
            **environment,
            "RUNNER_HOST": "127.0.0.1",
            "RUNNER_PORT": str(self.port),
            "RUNNER_LOG_LEVEL": log_level,
        }
        self._process: asyncio.subprocess.Process | None = None
        self._pids: list[int] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    async def start(self, timeout: float = 60.0) -> None:
        cores = self._cores

        def in_child() -> None:
            _die_with_parent()
            if cores:
                os.sched_setaffinity(0, cores)

        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            *self._command,
            cwd=self._root,
            env=self._env,
            stdout=asyncio.subprocess.DEVNULL,
            preexec_fn=in_child,
        )
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient() as http:
            while time.monotonic() < deadline:
                if self._process.returncode is not None:
                    raise RuntimeError(f"the runner exited with {self._process.returncode}")
                try:
                    # Ready: warm (the call stack and models loaded) and, a pool, every worker
                    # up; an older checkout (--root) with no /ready once /health answers.
                    ready = (await http.get(f"{self.url}/ready")).status_code
                    if ready == 200 or ready == 404:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise TimeoutError(f"the runner was not ready within {timeout:g}s")

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await asyncio.wait_for(self._process.wait(), 20)

    async def __aenter__(self) -> RunnerProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def pids(self) -> list[int]:
        """The runner's processes: the one process, or a pool's front and its workers.

        Found once (scanning ``/proc`` costs the benchmark's own core), and again
        only when one of them has gone.
        """
        if self._pids and all(Path(f"/proc/{pid}").exists() for pid in self._pids):
            return self._pids
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = _stat_fields(stat)
            except (OSError, IndexError):
                continue  # it ended while being read
            if int(fields[1]) == self.pid:
                children.append(int(stat.parent.name))
        self._pids = [self.pid, *children]
        return self._pids

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the runner so far, every thread and worker included."""
        total = 0
        for pid in self.pids():
            try:
                fields = _stat_fields(Path(f"/proc/{pid}/stat"))
            except (OSError, IndexError):
                continue
            total += int(fields[11]) + int(fields[12])
        return total / CLOCK_TICKS

    def cpu_seconds_of(self, pid: int) -> float:
        """User plus system CPU time of one of the runner's processes (``pids``) so far."""
        fields = _stat_fields(Path(f"/proc/{pid}/stat"))
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def rss_mib(self) -> float:
        """Resident memory of the runner's processes together."""
        total = 0.0
        for pid in self.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        if not total:
            raise RuntimeError("no VmRSS in /proc/<pid>/status")
        return total


def _stat_fields(stat: Path) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name: state, ppid, ..."""
    return stat.read_text().rsplit(")", 1)[1].split()


def voice_call(call_id: str, prompt: str, llm_type: str = "openai.gpt-4o") -> dict[str, Any]:
    """A single-AI voice call on the Deepgram and Cartesia simulators, fixed end-of-turn rule."""
    return {
        "id": call_id,
        "llm_type": llm_type,
        "llm_messages": [{"role": "system", "content": prompt}],
        "stt_type": "deepgram",
        "tts_type": "cartesia",
        "tts_voice_id": "voice-a",
        "smart_turn_enabled": False,
    }


async def caller_turn(
    cloud: Cloud, call: CallRecord, speech: bytes, timeout: float = 30.0
) -> tuple[int, float]:
    """The caller says ``speech``; returns the index of the reply's first bot audio chunk,
    and the voice-to-voice time: from the end of the caller's speech to that chunk."""
    before = len(call.audio_chunks())
    await cloud.manager.say(call.call_id, Caller.pcm(speech))

    def reply_began(c: CallRecord) -> bool:
        # On a loaded machine the last chunk of the previous reply can still arrive
        # while the caller speaks: the reply is what comes once all of it was sent.
        spoken = [s for s in c.caller_segments if s.kind is SegmentKind.AUDIO]
        ended = c.caller_speech_ended_at()
        return (
            bool(spoken)
            # Sent whole (its last 20 ms frame may be cut or padded).
            and len(spoken[-1].audio) > len(speech) - 640
            and ended is not None
            and any(chunk.at > ended for chunk in c.audio_chunks()[before:])
        )

    await call.wait(reply_began, timeout, "a reply")
    ended = call.caller_speech_ended_at()
    assert ended is not None
    chunks = call.audio_chunks()
    first = next(i for i in range(before, len(chunks)) if chunks[i].at > ended)
    return first, chunks[first].at - ended


# The cores this process could use when it started, before split_cores pinned it.
ALL_CORES = frozenset(os.sched_getaffinity(0))


def split_cores() -> tuple[set[int], set[int]]:
    """(the runner's cores, the benchmark's): apart, so the simulators don't crowd the runner.

    Pins this process to the second set. On one core both get it.
    """
    cores = sorted(ALL_CORES)
    if len(cores) < 2:
        return set(cores), set(cores)
    runner, rest = {cores[0]}, set(cores[1:])
    os.sched_setaffinity(0, rest)
    return runner, rest


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table, so a run's output can go into BENCHMARKS.md as it is."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def machine() -> str:
    """One line about where a figure was measured."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def banner(title: str) -> None:
    print(f"## {title}\n\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}\n")
