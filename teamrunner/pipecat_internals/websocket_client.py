"""pipecat's websocket client transport, unpaced and building the processors it is given.

``UnpacedClientOutput`` overrides ``WebsocketClientOutputTransport._write_audio_sleep``
(pipecat's real-time pacing of audio writes) with nothing, sends through a
:class:`~teamrunner.pipecat_internals.media_sender.DirectMediaSender` (built
in ``set_transport_ready``, pipecat's hook that builds the senders, into
``_media_senders``, where the transport looks them up), and offers
``write_now``, pipecat's ``_write_frame``: serialize a frame and send it at
once, outside the audio queue. ``DirectClientInput`` hands caller audio on
from the socket's own task, without pipecat's audio queue and task (it
overrides ``BaseInputTransport.set_transport_ready``, pipecat's hook that
makes them, and reads ``_params`` and ``_paused`` as pipecat's task does).
``WebsocketClient`` is pipecat's client
transport whose ``input()`` and ``output()`` build the processors it is
handed, on the session and params it keeps in ``_session`` and ``_params``,
and store them where its own callbacks find them (``_input``, ``_output``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    OutputTransportReadyFrame,
    StartFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.transports.websocket.client import (
    WebsocketClientInputTransport,
    WebsocketClientOutputTransport,
    WebsocketClientParams,
    WebsocketClientSession,
    WebsocketClientTransport,
)

from teamrunner.pipecat_internals.media_sender import DirectMediaSender

InputT = TypeVar("InputT", bound=WebsocketClientInputTransport)
OutputT = TypeVar("OutputT", bound=WebsocketClientOutputTransport)


class UnpacedClientOutput(WebsocketClientOutputTransport):
    """pipecat's websocket client output, writing audio as fast as it comes."""

    async def set_transport_ready(self, frame: StartFrame) -> None:
        """Start the one sender the runner's output has, a :class:`DirectMediaSender`.

        An output with named destinations (the runner's have none) gets pipecat's senders.
        """
        params = self._params
        if params.audio_out_destinations or params.video_out_destinations:
            await super().set_transport_ready(frame)
            return
        sender = DirectMediaSender(
            self,
            destination=None,
            sample_rate=self.sample_rate,
            audio_chunk_size=self.audio_chunk_size,
            params=params,
        )
        self._media_senders[None] = sender
        await sender.start(frame)
        await self.push_frame(OutputTransportReadyFrame(), FrameDirection.UPSTREAM)

    async def _write_audio_sleep(self) -> None:
        """Skip pipecat's pacing: the peer plays the audio out in real time itself."""

    async def write_now(self, frame: Frame) -> bool:
        """Serialize ``frame`` and send it at once, ahead of any queued audio.

        Returns:
            Whether the socket took it (False when it is closed or closing).
        """
        return await self._write_frame(frame)


class DirectClientInput(WebsocketClientInputTransport):
    """pipecat's websocket client input, handing caller audio on as the socket reads it.

    pipecat's input transport puts every audio frame on a queue of its own,
    and a task of its own takes it off (with ``asyncio.wait_for``, which in
    Python 3.11 wraps each ``get`` in a task and a timer) to push it
    downstream: three wake-ups of the event loop for each caller frame, 25 a
    second a call, to do nothing but pass the frame on, since the runner sets
    no audio filter. Here the socket's own task pushes the frame, as
    pipecat's task would have: only once the transport is ready (pipecat
    makes its task there) and until the end or a cancel reaches it (after
    which pipecat cancels the task, and what was queued is never pushed),
    not while paused, and not without audio. An input with an audio filter
    keeps pipecat's way.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._handing_on = False

    async def set_transport_ready(self, frame: StartFrame) -> None:
        if self._params.audio_in_filter is not None:
            await super().set_transport_ready(frame)
            return
        self._handing_on = True

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, (EndFrame, CancelFrame)):
            # pipecat pushes an EndFrame on before it stops its audio task: no caller
            # audio may follow the end down the pipeline.
            self._handing_on = False
        await super().process_frame(frame, direction)

    async def push_audio_frame(self, frame: InputAudioRawFrame) -> None:
        params = self._params
        if params.audio_in_filter is not None:
            await super().push_audio_frame(frame)
            return
        if not (self._handing_on and params.audio_in_enabled and not self._paused):
            return
        if frame.audio and params.audio_in_passthrough:
            await self.push_frame(frame)


class WebsocketClient(WebsocketClientTransport, Generic[InputT, OutputT]):
    """pipecat's websocket client transport, building the input and output processors given.

    ``input()`` and ``output()`` are pipecat's documented factories of a
    transport's processors, and pipecat's client builds its own in them the
    same way: once, on the transport's session and params.

    Args:
        uri: The websocket to dial.
        params: pipecat's client params.
        make_input: Builds the input processor from (transport, session, params).
        make_output: Builds the output processor from (transport, session, params).
    """

    def __init__(
        self,
        uri: str,
        params: WebsocketClientParams,
        *,
        make_input: Callable[
            [WebsocketClientTransport, WebsocketClientSession, WebsocketClientParams], InputT
        ],
        make_output: Callable[
            [WebsocketClientTransport, WebsocketClientSession, WebsocketClientParams], OutputT
        ],
    ) -> None:
        super().__init__(uri=uri, params=params)
        self._make_input = make_input
        self._make_output = make_output
        self._built_input: InputT | None = None
        self._built_output: OutputT | None = None

    def input(self) -> InputT:
        if self._built_input is None:
            # pipecat's own callbacks hand incoming messages to ``_input``.
            self._built_input = self._make_input(self, self._session, self._params)
            self._input = self._built_input
        return self._built_input

    def output(self) -> OutputT:
        if self._built_output is None:
            self._built_output = self._make_output(self, self._session, self._params)
            self._output = self._built_output
        return self._built_output
