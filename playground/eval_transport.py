"""A call's transport over pipecat's eval harness: one accepted websocket, speaking RTVI.

``pipecat eval run --bot-url ws://.../ws`` connects once per scenario and
sends its connection's flags first (``eval-connect``: text or audio, whether
to send it the bot's audio). ``EvalSocket`` is the call's transport over that
websocket, for ``run.build_call`` in place of pipecat-manager's sockets: it
is pipecat's own ``EvalFastAPIWebsocketTransport``, with pipecat's
``EvalSerializer``, which turns the harness's ``send-text``, ``eval-context``,
``eval-configure`` and ``eval-cancel`` into frames and sends back only RTVI
messages (and the bot's audio when asked). The call sends the harness every
RTVI message pipecat makes by default (``call.rtvi``): the harness reads
``bot-ready``, ``bot-llm-started``, the function calls and the speaking
states, which pipecat-manager is never sent, besides the bot's words.

Unlike pipecat-manager's media server, the harness hears the bot's audio as
it is played, so the output is paced in real time, as pipecat's transports
are. Nothing here knows what a call or a team is.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import WebSocket
from pipecat.evals.fastapi_transport import EvalFastAPIWebsocketTransport
from pipecat.evals.serializer import EvalConnectionFlags, EvalSerializer, parse_eval_connect
from pipecat.evals.transport import EvalTransportParams
from pipecat.observers.base_observer import BaseObserver
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport

from teamrunner.call.rtvi import CallRTVI, RTVIMessages
from teamrunner.manager.transport import SAMPLE_RATE
from teamrunner.transport import Link


class NotAnEval(Exception):
    """The websocket's first message was not pipecat eval's ``eval-connect``."""


async def read_eval_connect(websocket: WebSocket) -> EvalConnectionFlags:
    """The flags of the harness's first message, ``eval-connect``.

    Raises:
        NotAnEval: the first message is something else.
    """
    try:
        message = await websocket.receive_json()
    except ValueError as e:
        raise NotAnEval("the first message is not JSON") from e
    flags = parse_eval_connect(message)
    if flags is None:
        raise NotAnEval("the first message is not pipecat eval's eval-connect")
    return flags


@dataclass
class EvalSocket:
    """A call's transport over one accepted eval websocket (``teamrunner.transport.CallTransport``).

    Attributes:
        socket: pipecat's eval transport over the websocket.
        address: The harness's end of it, as ``host:port``.
    """

    socket: EvalFastAPIWebsocketTransport
    address: str

    @classmethod
    def accept(cls, websocket: WebSocket, flags: EvalConnectionFlags) -> EvalSocket:
        """The transport over ``websocket``, accepted and its ``eval-connect`` read (``flags``)."""
        params = EvalTransportParams(
            serializer=EvalSerializer(),
            audio_in_enabled=True,
            audio_in_sample_rate=SAMPLE_RATE,
            audio_out_enabled=True,
            audio_out_sample_rate=SAMPLE_RATE,
        )
        client = websocket.client
        address = f"{client.host}:{client.port}" if client is not None else "the harness"
        return cls(EvalFastAPIWebsocketTransport(websocket, params, flags), address)

    def input(self) -> BaseInputTransport:
        return self.socket.input()

    def output(self) -> BaseOutputTransport:
        return self.socket.output()

    def components(self) -> list[tuple[str, FrameProcessor]]:
        return [(f"{link.name} to {link.peer}", link.processor) for link in self.links()]

    def links(self) -> list[Link]:
        return [
            Link(
                name="eval socket",
                peer="the eval harness",
                events=self.socket,
                processor=self.input(),
                address=self.address,
                hint="did the harness close its connection?",
                connected="on_client_connected",
                disconnected="on_client_disconnected",
            )
        ]

    def rtvi(self, companion: BaseObserver) -> CallRTVI:
        # Every message pipecat's RTVI observer makes by default: the harness reads them.
        # A call's own, since the harness reconfigures them (eval-configure).
        return CallRTVI(self.output(), RTVIMessages(), companion=companion)
