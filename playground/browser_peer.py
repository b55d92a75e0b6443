"""A call's transport over a browser's WebRTC peer connection, for ``teamrunner talk``.

``BrowserPeer`` is a ``teamrunner.transport.CallTransport`` around pipecat's
``SmallWebRTCTransport``: the browser's microphone comes in as caller audio,
the bot's voice goes out on the peer's audio track (paced in real time, as
the browser plays what it gets), and RTVI messages travel on its data
channel. ``run.build_call`` builds the team's real call over it in place of
pipecat-manager's sockets.

The session (``teamrunner.lifecycle.session``) starts a call once each
``Link`` fires ``on_connected`` and ends it on ``on_disconnected``, the events
pipecat's client transports fire; pipecat's WebRTC transport names them
``on_client_connected`` and ``on_client_disconnected``, so ``BrowserTransport``
fires both names. It fires ``on_connected`` only once the pipeline has set
its transport up and the peer is connected, which is why a talk session
starts the call once the peer connection is up (``peer_connected``), not
while the browser is still gathering its candidates.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pipecat.observers.base_observer import BaseObserver
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
from pipecat.transports.smallwebrtc.transport import (
    SmallWebRTCInputTransport,
    SmallWebRTCOutputTransport,
    SmallWebRTCTransport,
)

from teamrunner.manager.events import ManagerRTVI
from teamrunner.manager.transport import SAMPLE_RATE
from teamrunner.transport import Link


class PeerNotConnected(Exception):
    """The browser's peer connection did not come up."""


class BrowserTransport(SmallWebRTCTransport):
    """pipecat's WebRTC transport, also firing ``on_connected`` and ``on_disconnected``."""

    def __init__(self, connection: SmallWebRTCConnection, params: TransportParams) -> None:
        super().__init__(connection, params)
        # Sync: the session learns of the peer before the pipeline reports it started.
        self._register_event_handler("on_connected", sync=True)
        self._register_event_handler("on_disconnected", sync=True)
        self.add_event_handler("on_client_connected", self._peer_connected)
        self.add_event_handler("on_client_disconnected", self._peer_disconnected)

    async def _peer_connected(self, transport: SmallWebRTCTransport, client: Any) -> None:
        await self._call_event_handler("on_connected", client)

    async def _peer_disconnected(self, transport: SmallWebRTCTransport, client: Any) -> None:
        await self._call_event_handler("on_disconnected", client)


class BrowserPeer:
    """A call's transport over one browser peer connection (a ``CallTransport``).

    Args:
        connection: pipecat's connection, its SDP answer already given.
    """

    def __init__(self, connection: SmallWebRTCConnection) -> None:
        self.connection = connection
        self.transport = BrowserTransport(
            connection,
            TransportParams(
                audio_in_enabled=True,
                audio_in_sample_rate=SAMPLE_RATE,
                audio_out_enabled=True,
                audio_out_sample_rate=SAMPLE_RATE,
            ),
        )

    def input(self) -> SmallWebRTCInputTransport:
        return self.transport.input()

    def output(self) -> SmallWebRTCOutputTransport:
        return self.transport.output()

    def components(self) -> list[tuple[str, FrameProcessor]]:
        return [(f"{link.name} to {link.peer}", link.processor) for link in self.links()]

    def rtvi(self, companion: BaseObserver) -> ManagerRTVI:
        """The call's RTVI processor, for a call builder that asks its transport for one.

        The one pipecat-manager's sockets have: the browser gets what Go gets,
        and ``talk_events.TalkEvents`` adds what the talk page reads.
        """
        return ManagerRTVI(self.output(), companion=companion)

    def links(self) -> list[Link]:
        return [
            Link(
                name="peer connection",
                peer="the browser",
                events=self.transport,
                processor=self.input(),
                address=f"WebRTC peer {self.connection.pc_id}",
                hint="did the browser close the page or lose its microphone?",
            )
        ]


async def peer_connected(connection: SmallWebRTCConnection, timeout: float) -> None:
    """Return once the browser's peer connection is up.

    Raises:
        PeerNotConnected: it failed or closed, or was not up within ``timeout``.
    """
    pc = connection.pc
    settled = asyncio.Event()

    def changed() -> None:
        if pc.connectionState in ("connected", "failed", "closed"):
            settled.set()

    pc.on("connectionstatechange", changed)
    try:
        changed()
        await asyncio.wait_for(settled.wait(), timeout)
    except TimeoutError:
        raise PeerNotConnected(f"the browser's peer did not connect within {timeout:g}s") from None
    finally:
        pc.remove_listener("connectionstatechange", changed)
    if pc.connectionState != "connected":
        raise PeerNotConnected(f"the browser's peer connection {pc.connectionState}")
