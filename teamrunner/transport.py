"""A call's transport: the seam between a call and wherever its caller is.

The call builder (``run.build_call``) is handed a ``CallTransport`` from
above and puts its input and output processors at the ends of the pipeline;
the session (``lifecycle.session``) starts the call once every ``Link`` is
up and ends it when one closes. In production it is pipecat-manager's two
websockets (``manager.transport.ManagerSockets``); another kind of caller is
another transport, not another call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pipecat.processors.frame_processor import FrameProcessor
from pipecat.transports.base_transport import BaseTransport


@dataclass(frozen=True)
class Link:
    """One connection of a call's transport, which must be up for the call to start.

    Attributes:
        name: What it is, e.g. "input socket".
        peer: Who is at the other end, e.g. "pipecat-manager".
        events: Fires ``on_connected`` and ``on_disconnected`` (a pipecat transport).
        processor: Its processor in the pipeline, whose errors say why it did not connect.
        address: Where it connects to, as an operator would look it up.
        hint: What to check when it does not connect.
    """

    name: str
    peer: str
    events: BaseTransport
    processor: FrameProcessor
    address: str
    hint: str


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
