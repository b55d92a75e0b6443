"""The example remote policy service, run as a process of its own for a call on this machine.

``ExamplePolicy`` starts ``examples/receptionist_policy.py`` exactly as its
docstring says to run it (``python3 examples/receptionist_policy.py --port 0
--token T``), with a token of its own, on an ephemeral port it reads from the
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
# How long the service may take to say where it listens: a fresh Python process importing
# its modules, which took over 10 s once in CI, on two slow cores shared with the suite.
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

    def __init__(self, base: RemotePolicy | None = None) -> None:
        self._base = base or RemotePolicy(url="http://127.0.0.1")
        self.token = secrets.token_urlsafe(18)
        self.url = ""
        self.requests: list[str] = []
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

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
            "--token",
            self.token,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert self._process.stdout is not None
        try:
            first = await asyncio.wait_for(self._process.stdout.readline(), START_TIMEOUT_SECS)
        except TimeoutError:
            first = b""
        found = _LISTENING.search(first.decode(errors="replace"))
        if found is None:
            await self.stop()
            raise ExamplePolicyError("the example policy service did not start")
        self.url = found.group(1)
        self._reader = asyncio.get_running_loop().create_task(self._read(self._process.stdout))

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        """Keep what the service prints about each request (and keep its pipe from filling)."""
        while line := await stdout.readline():
            self.requests.append(line.decode(errors="replace").strip())

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await self._process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self._process = self._reader = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
