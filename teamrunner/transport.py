"""A call's transport: the seam between a call and wherever its caller is.

The call builder (``run.build_call``) is handed a ``CallTransport`` from
above and puts its input and output processors at the ends of the pipeline;
the session (``lifecycle.session``) starts the call once every ``Link`` is
up and ends it when one closes. A transport also says which RTVI messages
the other end reads, by the RTVI processor it makes for the call
(``call.rtvi``). In production it is pipecat-manager's two websockets
(``manager.transport.ManagerSockets``); another kind of caller is another
transport, not another call (pipecat's eval harness: ``playground.eval_transport``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pipecat.observers.base_observer import BaseObserver
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIProcessor
from pipecat.transports.base_transport import BaseTransport


@dataclass(frozen=True)
class Link:
    """One connection of a call's transport, which must be up for the call to start.

    Attributes:
        name: What it is, e.g. "input socket".
        peer: Who is at the other end, e.g. "pipecat-manager".
        events: Fires ``connected`` and ``disconnected`` (a pipecat transport).
        processor: Its processor in the pipeline, whose errors say why it did not connect.
        address: Where it connects to, as an operator would look it up.
        hint: What to check when it does not connect.
        connected: The name of the event ``events`` fires once it is up.
        disconnected: The name of the event ``events`` fires once it is down.
    """

    name: str
    peer: str
    events: BaseTransport
    processor: FrameProcessor
    address: str
    hint: str
    # pipecat's client transports name them so; its server transports say on_client_...
    connected: str = "on_connected"
    disconnected: str = "on_disconnected"


class CallTransport(Protocol):
    """Where a call's caller is: its frames in and out, and the links that carry them.

    pipecat-manager's sockets in production (``manager.transport.ManagerSockets``).
    """

    def input(self) -> FrameProcessor | None:
        """What the caller says comes in here (None: a call with no caller audio)."""
        ...

    def output(self) -> FrameProcessor:
        """What the bot says goes out here."""
        ...

    def components(self) -> list[tuple[str, FrameProcessor]]:
        """Its processors that must come up, with the name a failure is reported under."""
        ...

    def links(self) -> list[Link]:
        """Its connections: the call starts once every one is up, and ends when one closes."""
        ...

    def rtvi(self, companion: BaseObserver) -> RTVIProcessor:
        """The call's RTVI processor, sending what the other end reads to ``output()``.

        Args:
            companion: The call's own observer, handed every frame first (``call.rtvi``).
        """
        ...
