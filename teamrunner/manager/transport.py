"""The two websockets to pipecat-manager (docs/contract.md section 3), as pipecat transports.

pipecat-manager listens; the runner dials ``/{id}/ws?direction=input`` (caller
audio and ``send-text``, opened only when the call has caller audio) and
``/{id}/ws?direction=output`` (bot audio, ``FLUSH_MEDIA``, RTVI events). Both
carry pipecat's protobuf frames. Two behaviours differ from pipecat's stock
websocket client, and each has a subclass here (on the adapters in
``teamrunner.pipecat_internals.websocket_client``, which hold the pipecat
privates they take):

* Output is not paced. Go hands bot audio to the media server as fast as it
  arrives and the media server plays it out in real time, so the runner sends
  each chunk as soon as it has it; on barge-in it sends the text frame
  ``FLUSH_MEDIA`` so the media server drops what it has queued, and sends
  nothing made before the barge-in after it.
* Input holds caller audio that arrives before the pipeline has started
  (pipecat's input transport has no queue for it yet and would fail, killing
  the socket) and delivers it, in order, once it has. It also joins Go's 20 ms
  frames into frames of ``RUNNER_CALLER_AUDIO_MS``: every caller frame is a
  queue hand-off at each processor it passes and a message to the STT
  provider, and at 50 frames a second per call that is most of what a voice
  call costs the runner (BENCHMARKS.md section 5). A joined frame waits for
  its last part, so a word reaches the VAD and the STT up to that much less
  20 ms later. The socket's own task then hands each joined frame on
  (``DirectClientInput``), with no queue and task of the transport's between.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from loguru import logger
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    StartFrame,
    TextFrame,
)
from pipecat.observers.base_observer import BaseObserver
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_transport import BaseTransport
from pipecat.transports.websocket.client import (
    WebsocketClientInputTransport,
    WebsocketClientOutputTransport,
    WebsocketClientParams,
    WebsocketClientSession,
    WebsocketClientTransport,
)

from teamrunner.manager.events import ManagerRTVI
from teamrunner.manager.serializer import ManagerSerializer
from teamrunner.manager.urls import socket_url
from teamrunner.observe.redaction import Redactor
from teamrunner.pipecat_internals.websocket_client import (
    DirectClientInput,
    UnpacedClientOutput,
    WebsocketClient,
)
from teamrunner.transport import Link

FLUSH_MEDIA = "FLUSH_MEDIA"
SAMPLE_RATE = 16000

# Caller audio held before the pipeline starts: 10 s of 20 ms frames is far
# more than a start takes, and bounds the memory a misbehaving peer can use.
EARLY_AUDIO_FRAMES = 500


class UnpacedOutputTransport(UnpacedClientOutput):
    """Sends bot audio as soon as it is produced, and ``FLUSH_MEDIA`` on barge-in.

    Nothing made before a barge-in may leave after its ``FLUSH_MEDIA``: the
    media server would play it. pipecat drops the queued audio on an
    interruption but lets its audio task finish the chunk it has already taken
    off the queue, and that task yields between taking a chunk and writing it,
    so the write can land after a flush written meanwhile. Every frame's id
    comes from one counter that only grows (``pipecat.utils.utils.obj_id``),
    so a chunk with an id below the flush's was made before the barge-in; the
    write drops it unless pipecat marked it uninterruptible.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._flushed_before_id = -1

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame):
            # pipecat has dropped what was queued; the flush goes out now, and the
            # chunk still in the audio task's hands is dropped on its way out.
            flush = TextFrame(text=FLUSH_MEDIA)
            self._flushed_before_id = flush.id
            await self.write_now(flush)

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        if frame.interruptible and frame.id < self._flushed_before_id:
            return False
        return await super().write_audio_frame(frame)


class AudioJoiner:
    """Joins consecutive audio frames of one format into frames of at least ``frame_ms``.

    Args:
        frame_ms: The least duration of a joined frame; 0 passes frames as they are.
    """

    def __init__(self, frame_ms: int) -> None:
        self._frame_ms = frame_ms
        self._parts: list[InputAudioRawFrame] = []
        self._size = 0

    def add(self, frame: InputAudioRawFrame) -> list[InputAudioRawFrame]:
        """The frames ready to deliver once ``frame`` has arrived (none, one, or two)."""
        if self._frame_ms <= 0:
            return [frame]
        ready = []
        if self._parts and _format(self._parts[0]) != _format(frame):
            ready.append(self._join())
        self._parts.append(frame)
        self._size += len(frame.audio)
        bytes_per_ms = frame.sample_rate * frame.num_channels * 2 // 1000
        if self._size >= self._frame_ms * bytes_per_ms:
            ready.append(self._join())
        return ready

    def _join(self) -> InputAudioRawFrame:
        parts, self._parts, self._size = self._parts, [], 0
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        return InputAudioRawFrame(
            audio=b"".join(p.audio for p in parts),
            sample_rate=first.sample_rate,
            num_channels=first.num_channels,
        )


def _format(frame: InputAudioRawFrame) -> tuple[int, int]:
    return frame.sample_rate, frame.num_channels


class EarlyAudioInputTransport(DirectClientInput):
    """Keeps caller audio that arrives before start, replays it once started, and joins it.

    Args:
        join_ms: The least duration of a caller audio frame delivered (see ``AudioJoiner``).
    """

    def __init__(self, *args, join_ms: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._started = False
        self._early: deque[InputAudioRawFrame] = deque(maxlen=EARLY_AUDIO_FRAMES)
        self._joiner = AudioJoiner(join_ms)

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        self._started = True
        if self._early:
            logger.debug(f"{self}: delivering {len(self._early)} caller frames sent before start")
        while self._early:
            await self._deliver(self._early.popleft())

    async def push_audio_frame(self, frame: InputAudioRawFrame) -> None:
        if not self._started:
            self._early.append(frame)
            return
        await self._deliver(frame)

    async def _deliver(self, frame: InputAudioRawFrame) -> None:
        for joined in self._joiner.add(frame):
            await super().push_audio_frame(joined)


OutputSocket = WebsocketClient[WebsocketClientInputTransport, UnpacedOutputTransport]
InputSocket = WebsocketClient[EarlyAudioInputTransport, WebsocketClientOutputTransport]


@dataclass
class ManagerSockets:
    """A call's two websockets to pipecat-manager: its transport in production.

    ``input_socket`` is None for a text session. It is what
    ``teamrunner.transport.CallTransport`` asks of a transport.
    """

    input_socket: InputSocket | None
    output_socket: OutputSocket
    base_ws_url: str
    address: str

    def input(self) -> EarlyAudioInputTransport | None:
        return self.input_socket.input() if self.input_socket is not None else None

    def output(self) -> UnpacedOutputTransport:
        return self.output_socket.output()

    def components(self) -> list[tuple[str, FrameProcessor]]:
        return [(f"{link.name} to {link.peer}", link.processor) for link in self.links()]

    def links(self) -> list[Link]:
        sockets: list[tuple[str, BaseTransport, FrameProcessor]] = [
            ("output", self.output_socket, self.output())
        ]
        if self.input_socket is not None:
            sockets.append(("input", self.input_socket, self.input_socket.input()))
        hint = f"is pipecat-manager listening at PIPECATCALL_ADDRESS={self.address}?"
        return [
            Link(
                name=f"{direction} socket",
                peer="pipecat-manager",
                events=socket,
                processor=processor,
                address=socket_url(self.base_ws_url, "{id}", direction),
                hint=hint,
            )
            for direction, socket, processor in sockets
        ]

    def rtvi(self, companion: BaseObserver) -> ManagerRTVI:
        return ManagerRTVI(self.output(), companion=companion)


def open_sockets(
    base_ws_url: str,
    call_id: str,
    *,
    hears: bool,
    redactor: Redactor,
    caller_audio_ms: int = 0,
    address: str = "",
) -> ManagerSockets:
    """Build (not yet connect) the transports of a call; they dial while the pipeline sets up.

    ``caller_audio_ms`` is the least duration of the caller audio frames the
    pipeline gets (0: as pipecat-manager sends them).
    """

    def params() -> WebsocketClientParams:
        return WebsocketClientParams(
            serializer=ManagerSerializer(redactor),
            audio_in_enabled=True,
            audio_in_sample_rate=SAMPLE_RATE,
            audio_out_enabled=True,
            audio_out_sample_rate=SAMPLE_RATE,
            add_wav_header=False,
        )

    def early_audio_input(
        transport: WebsocketClientTransport,
        session: WebsocketClientSession,
        params: WebsocketClientParams,
    ) -> EarlyAudioInputTransport:
        return EarlyAudioInputTransport(transport, session, params, join_ms=caller_audio_ms)

    input_socket = (
        InputSocket(
            socket_url(base_ws_url, call_id, "input"),
            params(),
            make_input=early_audio_input,
            make_output=WebsocketClientOutputTransport,
        )
        if hears
        else None
    )
    output_socket = OutputSocket(
        socket_url(base_ws_url, call_id, "output"),
        params(),
        make_input=WebsocketClientInputTransport,
        make_output=UnpacedOutputTransport,
    )
    return ManagerSockets(input_socket, output_socket, base_ws_url, address)
