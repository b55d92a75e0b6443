"""The two websockets to pipecat-manager (docs/contract.md section 3), as pipecat transports.

pipecat-manager listens; the runner dials ``/{id}/ws?direction=input`` (caller
audio and ``send-text``, opened only when the call has caller audio) and
``/{id}/ws?direction=output`` (bot audio, ``FLUSH_MEDIA``, RTVI events). Both
carry pipecat's protobuf frames. Two behaviours differ from pipecat's stock
websocket client, and each has a subclass here:

* Output is not paced. Go hands bot audio to the media server as fast as it
  arrives and the media server plays it out in real time, so the runner sends
  each chunk as soon as it has it; on barge-in it sends the text frame
  ``FLUSH_MEDIA`` so the media server drops what it has queued.
* Input holds caller audio that arrives before the pipeline has started
  (pipecat's input transport has no queue for it yet and would fail, killing
  the socket) and delivers it, in order, once it has.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from loguru import logger
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    OutputTransportMessageFrame,
    OutputTransportMessageUrgentFrame,
    StartFrame,
    TextFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.serializers.protobuf import ProtobufFrameSerializer
from pipecat.transports.websocket.client import (
    WebsocketClientInputTransport,
    WebsocketClientOutputTransport,
    WebsocketClientParams,
    WebsocketClientTransport,
)

from teamrunner.manager.urls import socket_url
from teamrunner.redaction import Redactor

FLUSH_MEDIA = "FLUSH_MEDIA"
SAMPLE_RATE = 16000

# Caller audio held before the pipeline starts: 10 s of 20 ms frames is far
# more than a start takes, and bounds the memory a misbehaving peer can use.
EARLY_AUDIO_FRAMES = 500


class RedactingSerializer(ProtobufFrameSerializer):
    """pipecat's protobuf serializer, scrubbing the redactor's secrets from messages to Go."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    async def serialize(self, frame: Frame) -> str | bytes | None:
        if isinstance(frame, (OutputTransportMessageFrame, OutputTransportMessageUrgentFrame)):
            message = self._redactor.redact_json(frame.message)
            if message is not frame.message:
                frame = type(frame)(message=message)
        return await super().serialize(frame)


class UnpacedOutputTransport(WebsocketClientOutputTransport):
    """Sends bot audio as soon as it is produced, and ``FLUSH_MEDIA`` on barge-in."""

    async def _write_audio_sleep(self) -> None:
        """Skip pipecat's real-time pacing: the media server paces playout itself."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, InterruptionFrame):
            # Ahead of everything else, so the media server stops playing at once.
            await self._write_frame(TextFrame(text=FLUSH_MEDIA))
        await super().process_frame(frame, direction)


class EarlyAudioInputTransport(WebsocketClientInputTransport):
    """Keeps caller audio that arrives before start, and replays it once started."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._started = False
        self._early: deque[InputAudioRawFrame] = deque(maxlen=EARLY_AUDIO_FRAMES)

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        self._started = True
        if self._early:
            logger.debug(f"{self}: delivering {len(self._early)} caller frames sent before start")
        while self._early:
            await super().push_audio_frame(self._early.popleft())

    async def push_audio_frame(self, frame: InputAudioRawFrame) -> None:
        if not self._started:
            self._early.append(frame)
            return
        await super().push_audio_frame(frame)


class _OutputSocket(WebsocketClientTransport):
    """pipecat's client transport, building the unpaced output transport.

    ``output()`` is the documented factory of a transport's output processor,
    and pipecat's websocket client builds its own in it the same way.
    """

    def output(self) -> UnpacedOutputTransport:
        if not isinstance(self._output, UnpacedOutputTransport):
            self._output = UnpacedOutputTransport(self, self._session, self._params)
        return self._output


class _InputSocket(WebsocketClientTransport):
    """pipecat's client transport, building the input transport that keeps early audio."""

    def input(self) -> EarlyAudioInputTransport:
        if not isinstance(self._input, EarlyAudioInputTransport):
            self._input = EarlyAudioInputTransport(self, self._session, self._params)
        return self._input


@dataclass
class ManagerSockets:
    """The transports of one call: ``input`` is None for a text session."""

    input: _InputSocket | None
    output: _OutputSocket


def open_sockets(
    base_ws_url: str, call_id: str, *, hears: bool, redactor: Redactor
) -> ManagerSockets:
    """Build (not yet connect) the transports of a call; they dial while the pipeline sets up."""

    def params() -> WebsocketClientParams:
        return WebsocketClientParams(
            serializer=RedactingSerializer(redactor),
            audio_in_enabled=True,
            audio_in_sample_rate=SAMPLE_RATE,
            audio_out_enabled=True,
            audio_out_sample_rate=SAMPLE_RATE,
            add_wav_header=False,
        )

    input_socket = (
        _InputSocket(uri=socket_url(base_ws_url, call_id, "input"), params=params())
        if hears
        else None
    )
    output_socket = _OutputSocket(uri=socket_url(base_ws_url, call_id, "output"), params=params())
    return ManagerSockets(input=input_socket, output=output_socket)
