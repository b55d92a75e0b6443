"""pipecat's websocket services, able to be set up without connecting and connected later.

pipecat's Deepgram STT and Cartesia and ElevenLabs TTS connect when they are
set up, through ``_connect`` (which their reconnects call too), so a
pipeline does not start until every one of them has finished its handshake.
``ConnectsWhenOpened`` lets a service be set up, started and stopped with
its pipeline while its first connection waits for ``open``: a connect asked
for before then is skipped. Once opened, every connect (pipecat's own
reconnects included) goes ahead as usual. A service never deferred behaves
exactly as pipecat's.

The team routers use it for the services no member has at the start
(``routing.services``): the call answers once the start member's services
are connected, and the others connect right after, or when a handoff first
needs them, whichever comes first. Imports pipecat only; a vendor's module
is loaded by whoever names its class.
"""

from __future__ import annotations

import asyncio

from pipecat.frames.frames import CancelFrame, EndFrame


class ConnectsWhenOpened:
    """Put before a pipecat websocket service's class: its first connect can wait for ``open``.

    Without ``defer_connecting`` the service connects as pipecat's does.
    """

    # Class defaults, so the service's own ``__init__`` is left as pipecat wrote it.
    _connect_deferred: bool = False
    _connect_closed: bool = False
    _open_task: asyncio.Task[None] | None = None

    def defer_connecting(self) -> None:
        """Skip the connect of setting up: the service connects on ``open``. Call before setup."""
        self._connect_deferred = True

    @property
    def connect_deferred(self) -> bool:
        """Whether the service is still waiting for ``open`` to connect."""
        return self._connect_deferred

    @property
    def opened(self) -> bool:
        """Whether ``open`` has nothing to wait for: never deferred, or its attempt settled."""
        if self._open_task is None:
            return not self._connect_deferred
        return self._open_task.done()

    async def open(self) -> None:
        """Connect now, if connecting was deferred; return once the attempt has settled.

        One attempt, however many callers ask; a caller cancelled while it waits
        leaves the attempt going for the others. Nothing after the service stopped.
        """
        if self._open_task is None:
            if not self._connect_deferred or self._connect_closed:
                return
            self._open_task = self.create_task(self._open_now(), "open")  # type: ignore[attr-defined]
        await asyncio.shield(self._open_task)

    async def _open_now(self) -> None:
        self._connect_deferred = False
        await self._connect()

    async def _connect(self) -> None:
        if self._connect_deferred:
            return
        await super()._connect()  # type: ignore[misc]

    async def stop(self, frame: EndFrame) -> None:
        await self._stop_opening()
        await super().stop(frame)  # type: ignore[misc]

    async def cancel(self, frame: CancelFrame) -> None:
        await self._stop_opening()
        await super().cancel(frame)  # type: ignore[misc]

    async def cleanup(self) -> None:
        await self._stop_opening()
        await super().cleanup()  # type: ignore[misc]

    async def _stop_opening(self) -> None:
        """No connect after the service stops: one under way is cancelled, none starts."""
        self._connect_closed = True
        if self._open_task is not None and not self._open_task.done():
            await self.cancel_task(self._open_task)  # type: ignore[attr-defined]
