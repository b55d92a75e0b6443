"""The example remote policy service, run as a process of its own for a call on this machine.

``ExamplePolicy`` starts ``examples/receptionist_policy.py`` exactly as its
docstring says to run it (``python3 examples/receptionist_policy.py --port 0
--token=T``), with a token of its own, on an ephemeral port it reads from the
line the service prints, and stops it afterwards. The lines the service
prints about each request are kept (``requests``), not echoed.

The example lives beside the repository's code, not in the package: an
installed ``teamrunner`` without the repository has no example to run, and
says so.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import sys
from pathlib import Path
from typing import Self

from pydantic import SecretStr

from teamrunner.contract import RemotePolicy

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "receptionist_policy.py"
# How long the service may take to say where it listens. It imports only the standard
# library and answers in well under a second; the bound is for a machine loaded by the whole
# suite. (An earlier failure in CI, read then as a slow start, was more likely a token that
# began with "-": the service exits at once, and its reason was not kept then.)
START_TIMEOUT_SECS = 30.0
_LISTENING = re.compile(r"on (http://\S+)")


class ExamplePolicyError(Exception):
    """The example service is missing or did not start."""


class ExamplePolicy:
    """The example receptionist policy, as a subprocess on 127.0.0.1.

    Args:
        base: The team file's ``remote_policy``, whose ``config`` and
            ``timeout_secs`` are kept; its address and token become the service's.
    """

    def __init__(self, base: RemotePolicy | None = None, token: str | None = None) -> None:
        self._base = base or RemotePolicy(url="http://127.0.0.1")
        self.token = token or secrets.token_urlsafe(18)
        self.url = ""
        self.requests: list[str] = []
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._drain: asyncio.Task[None] | None = None

    @property
    def remote_policy(self) -> RemotePolicy:
        """The ``remote_policy`` of a /run request that uses this service."""
        return self._base.model_copy(update={"url": self.url, "token": SecretStr(self.token)})

    async def start(self) -> None:
        if not EXAMPLE.exists():
            raise ExamplePolicyError(
                f"the example policy service ({EXAMPLE.name}) ships with the repository, not the "
                "package: run teamrunner from a clone, or start your own policy service and "
                "name it in a team file's remote_policy"
            )
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-u",  # its lines about each request arrive as they are printed
            str(EXAMPLE),
            "--port",
            "0",
            # One argument, not two: a URL-safe token starts with "-" one time in 64, and
            # argparse would read "--token -x..." as an option with its value missing.
            f"--token={self.token}",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None
        try:
            first = await asyncio.wait_for(self._process.stdout.readline(), START_TIMEOUT_SECS)
        except TimeoutError:
            first = b""
        found = _LISTENING.search(first.decode(errors="replace"))
        if found is None:
            why = await self._why_not_started()
            await self.stop()
            raise ExamplePolicyError(f"the example policy service did not start: {why}")
        self.url = found.group(1)
        self._drain = asyncio.get_running_loop().create_task(self._discard(self._process))
        self._reader = asyncio.get_running_loop().create_task(self._read(self._process.stdout))

    async def _why_not_started(self) -> str:
        """The last line the service wrote to stderr, its token masked, or that it hung."""
        assert self._process is not None and self._process.stderr is not None
        if self._process.returncode is None:
            try:
                await asyncio.wait_for(self._process.wait(), 1.0)
            except TimeoutError:
                return f"it printed no address within {START_TIMEOUT_SECS:g} s"
        lines = (await self._process.stderr.read()).decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else "no message"
        return f"it exited ({self._process.returncode}): {last.replace(self.token, '***')}"

    @staticmethod
    async def _discard(process: asyncio.subprocess.Process) -> None:
        """Read the running service's stderr so a traceback cannot fill its pipe and stall it."""
        assert process.stderr is not None
        while await process.stderr.read(65536):
            pass

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        """Keep what the service prints about each request (and keep its pipe from filling)."""
        while line := await stdout.readline():
            self.requests.append(line.decode(errors="replace").strip())

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await self._process.wait()
        tasks = [task for task in (self._reader, self._drain) if task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        self._process = self._reader = self._drain = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
