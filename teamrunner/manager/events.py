"""The RTVI events pipecat-manager reads, sent straight to its output socket.

pipecat-manager turns ``user-transcription`` (final), ``user-llm-text``,
``bot-llm-text``, ``bot-transcription``, ``bot-llm-stopped`` and ``error``
messages into events, and ignores every other RTVI message. So the runner
sends only those: pipecat's defaults add a message per spoken word, per
metric, per speaking state and per function call, each of which Go parses and
drops. The observer also looks at each frame once (``observe_every_push``
off), not at every processor it passes: pipecat hands each observer every
push through a queue of its own, which in a team handoff was five queue
hand-offs per frame on the event loop every call shares.

And it sends them straight to the output socket. pipecat's RTVI processor
sits at the head of the pipeline and pushes each message downstream through
every processor to the output transport, which in a team call means through
every branch of every router: per bot audio chunk, more work than the audio
itself (measured; see BENCHMARKS.md). ``RTVIObserver.send_rtvi_message`` is
pipecat's hook for sending messages another way. Errors are still reported by
the RTVI processor itself.

It is also the call's only observer: the call's journal observer
(``teamrunner.call.observer.CallObserver``) is handed each frame from here
rather than registered beside it, because pipecat gives every observer a
queue and a task of its own and hands it every frame each processor
processes, whether it wants them or not.

A line the runner says itself (``teamrunner.call.lines``: a greeting, a handoff
line, a nudge, a goodbye) reaches Go as the bot's words, the way a reply
does: ``bot-llm-text``, ``bot-transcription``, then ``bot-llm-stopped``. It
is sent from here, when its ``SpokenLineFrame`` is first pushed, so it keeps
its place among the call's other events.
"""

from __future__ import annotations

from typing import Any

from pipecat.frames.frames import OutputTransportMessageUrgentFrame
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIObserver, RTVIObserverParams, RTVIProcessor
from pipecat.processors.frameworks.rtvi import models as rtvi
from pipecat.processors.frameworks.rtvi.observer import RTVIFunctionCallReportLevel
from pydantic import BaseModel

from teamrunner.frames import SpokenLineFrame

# Only what pipecat-manager reads (see models/pipecatframe/helper.go on the Go side).
MANAGER_MESSAGES = RTVIObserverParams(
    bot_llm_enabled=True,  # bot-llm-started/-text/-stopped, bot-transcription
    user_llm_enabled=True,  # user-llm-text
    user_transcription_enabled=True,  # user-transcription
    bot_output_enabled=False,
    bot_tts_enabled=False,
    bot_speaking_enabled=False,
    user_speaking_enabled=False,
    user_mute_enabled=False,
    user_input_enabled=False,
    metrics_enabled=False,
    function_call_report_level={"*": RTVIFunctionCallReportLevel.DISABLED},
)

# The message types pipecat-manager turns into events; any other is not sent.
MANAGER_READS = frozenset(
    {
        "user-transcription",
        "user-llm-text",
        "bot-llm-text",
        "bot-transcription",
        "bot-llm-stopped",
        "error",
    }
)


class ManagerRTVI(RTVIProcessor):
    """pipecat's RTVI processor, whose observer is the call's ``ManagerEvents``.

    pipecat's worker adds an RTVI processor and observer to every pipeline,
    and warns on every call when a pipeline brings its own pair. Handing it
    this processor (``PipelineWorker(rtvi_processor=...)``) makes the worker
    put it at the head and ask it for its observer, so the runner's observer
    is the one installed and nothing is logged.

    Args:
        output: The output transport of the socket to pipecat-manager.
        companion: An observer of first pushes to hand each frame to, first.
    """

    def __init__(self, output: FrameProcessor, companion: BaseObserver | None = None) -> None:
        super().__init__()
        self.events = ManagerEvents(self, output, companion=companion)

    def create_rtvi_observer(
        self, *, params: RTVIObserverParams | None = None, **kwargs: Any
    ) -> ManagerEvents:
        """The call's one ``ManagerEvents`` (the worker's default ``params`` do not apply)."""
        return self.events


class ManagerEvents(RTVIObserver):
    """pipecat's RTVI observer, delivering to the output transport without crossing the pipeline.

    Args:
        rtvi: The call's RTVI processor (it handles what Go sends, such as send-text).
        output: The output transport of the socket to pipecat-manager.
        companion: An observer of first pushes to hand each frame to, first.
    """

    def __init__(
        self, rtvi: RTVIProcessor, output: FrameProcessor, companion: BaseObserver | None = None
    ) -> None:
        # Every message the runner sends is decided by a frame's first push (the
        # aggregated-text exception in RTVIObserver serves bot-output, which is off).
        super().__init__(rtvi, params=MANAGER_MESSAGES, observe_every_push=False)
        self._output = output
        self._companion = companion

    async def on_pipeline_started(self) -> None:
        await super().on_pipeline_started()
        if self._companion is not None:
            await self._companion.on_pipeline_started()

    async def on_push_frame(self, data: FramePushed) -> None:
        if self._companion is not None:
            await self._companion.on_push_frame(data)
        if isinstance(data.frame, SpokenLineFrame):
            if not data.first_push:
                return
            text = rtvi.TextMessageData(text=data.frame.text)
            await self.send_rtvi_message(rtvi.BotLLMTextMessage(data=text))
            await self.send_rtvi_message(rtvi.BotTranscriptionMessage(data=text))
            await self.send_rtvi_message(rtvi.BotLLMStoppedMessage())
            return
        await super().on_push_frame(data)

    async def send_rtvi_message(self, model: BaseModel, exclude_none: bool = True) -> None:
        if getattr(model, "type", None) not in MANAGER_READS:
            return
        message = model.model_dump(exclude_none=exclude_none)
        await self._output.queue_frame(OutputTransportMessageUrgentFrame(message=message))


def rtvi_error(error: str, *, fatal: bool) -> OutputTransportMessageUrgentFrame:
    """An RTVI ``error`` message for pipecat-manager, in pipecat's own model of one."""
    message = rtvi.Error(data=rtvi.ErrorData(error=error, fatal=fatal))
    return OutputTransportMessageUrgentFrame(message=message.model_dump())
