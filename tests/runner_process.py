"""``python main.py`` as a process of its own, for tests of what only a real process shows.

Keep-alive, slow clients, signals and exit status are properties of the
process that serves the API, not of the application inside it, so these
tests start the runner as it is deployed and talk to it over loopback.

A test gets one runner process (``RUNNER_WORKERS=1``) unless it asks for a
pool: the tests of a single process's behaviour then do not depend on how
many cores the machine running them has.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import httpx

ROOT = Path(__file__).resolve().parent.parent
# What a runner logs once a drain refuses new calls: each call registry's line, which
# a pool's workers write after their front has begun refusing calls itself.
DRAINING = "calls may go on for up to"


# A sitecustomize that makes an interpreter an install without the given modules.
_WITHOUT_MODULES = """\
import sys


class _NotInstalled:
    \"\"\"Answers the hidden modules as Python answers a module that is not installed.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def without_modules(tmp: Path, *names: str) -> dict[str, str]:
    """The environment of a Python process in which ``names`` are not installed.

    The test environment has every extra installed. A ``sitecustomize`` on the
    process's ``PYTHONPATH`` puts a finder first on ``sys.meta_path`` that
    raises, for each of ``names`` and anything inside it, the
    ``ModuleNotFoundError`` an import of a missing module raises; every other
    module is found as before.
    """
    folder = tmp / ("without-" + "-".join(names))
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(_WITHOUT_MODULES.format(names=set(names)))
    return {"PYTHONPATH": str(folder)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunnerProcess:
    """The runner in a child process; its stderr (the log) is kept for the test to read."""

    def __init__(self, environment: Mapping[str, str], tmp: Path) -> None:
        self.port = free_port()
        self.log_path = tmp / f"runner-{self.port}.log"
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "OTEL_"))}
        self.environment = {
            **clean,
            "RUNNER_HOST": "127.0.0.1",
            "RUNNER_PORT": str(self.port),
            "PIPECATCALL_ADDRESS": "127.0.0.1:9",
            "RUNNER_WORKERS": "1",
            **environment,
        }
        self.pool = self.environment["RUNNER_WORKERS"] != "1"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0, *, until: str = "/ready") -> RunnerProcess:
        """Start the runner; returns once ``until`` answers 200 (``/ready``: warm, workers up)."""
        log = self.log_path.open("wb")
        self._process = subprocess.Popen(
            [sys.executable, "main.py"], cwd=ROOT, env=self.environment, stdout=log, stderr=log
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"the runner exited with {self._process.returncode}:\n{self.log}"
                )
            try:
                if httpx.get(f"{self.url}{until}", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"the runner's {until} did not answer 200 within {timeout:g}s")

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_log(self, text: str, timeout: float = 10.0) -> None:
        """Wait until the runner has logged a line containing ``text``.

        The log is a file the process writes a line at a time, and a file
        announces nothing: it is read again until the line is there.
        """
        try:
            async with asyncio.timeout(timeout):
                while text not in self.log:  # noqa: ASYNC110 (nothing to await on a file)
                    await asyncio.sleep(0.02)
        except TimeoutError:
            raise TimeoutError(f"the runner logged no {text!r} within {timeout:g}s") from None

    def signal(self, sig: signal.Signals = signal.SIGTERM) -> None:
        assert self._process is not None
        self._process.send_signal(sig)

    def wait(self, timeout: float) -> int:
        """The exit status, once the process has ended (within ``timeout``)."""
        assert self._process is not None
        return self._process.wait(timeout)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def astop(self) -> None:
        """``stop`` from a test's event loop, which keeps running meanwhile.

        A worker ending its calls closes their sockets to the simulators, which
        run on the test's loop: stopped from a blocked loop, each close waits out
        its timeout.
        """
        await asyncio.to_thread(self.stop)

    def stop(self) -> None:
        """End the runner; a pool's front is signalled twice, so every worker ends its calls now."""
        if not self.running:
            return
        assert self._process is not None
        if self.pool:
            self._process.send_signal(signal.SIGTERM)
            # Two signals sent at once arrive as one: the second must come after the first.
            time.sleep(0.2)
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(20)
                return
            except subprocess.TimeoutExpired:
                pass
        self._process.kill()
        self._process.wait(10)


@dataclass(frozen=True)
class RawAnswer:
    """One response as it came off the socket."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RawConnection:
    """One kept-alive HTTP/1.1 connection, as Go's client pool holds one.

    Each request is sent byte for byte as given, and its answer read whole
    before the next is sent, on the same connection.
    """

    def __init__(self, host: str, port: int) -> None:
        self._address = (host, port)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Self:
        self._reader, self._writer = await asyncio.open_connection(*self._address)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()

    async def request(self, raw: bytes, timeout: float = 10.0) -> RawAnswer:
        """Send ``raw`` and read its answer; ``ConnectionError`` if the runner closed instead."""
        assert self._reader is not None and self._writer is not None
        self._writer.write(raw)
        await self._writer.drain()
        try:
            head = await asyncio.wait_for(self._reader.readuntil(b"\r\n\r\n"), timeout)
        except asyncio.IncompleteReadError as e:
            raise ConnectionError("the runner closed the connection without an answer") from e
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = dict(
            (name.strip().lower(), value.strip())
            for name, value in (line.split(":", 1) for line in lines if line)
        )
        length = int(headers.get("content-length", "0"))
        body = await asyncio.wait_for(self._reader.readexactly(length), timeout)
        return RawAnswer(int(status_line.split()[1]), headers, body)


def http_request(
    method: str, path: str, body: bytes = b"", headers: Mapping[str, str] | None = None
) -> bytes:
    """A raw HTTP/1.1 request, addressed to the runner on loopback unless ``headers`` say."""
    fields = {"Host": "127.0.0.1", "Content-Length": str(len(body)), **(headers or {})}
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    return head.encode("latin-1") + b"\r\n" + body
