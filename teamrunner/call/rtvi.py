"""The RTVI messages a call sends the party at the other end of its transport.

pipecat's worker puts an RTVI processor at the head of every pipeline (it
handles what the other end sends: ``client-ready``, ``send-text``) and
installs its observer, which turns frames into RTVI messages. A call's
transport says which messages its other end reads (``RTVIMessages``): to
pipecat-manager only the few it turns into events
(``teamrunner.manager.events``), to pipecat's eval harness all of pipecat's
defaults. Whichever they are, ``CallEvents`` sends them straight to the
transport's output. pipecat's RTVI processor pushes each message downstream
through every processor to the output transport, which in a team call means
through every branch of every router: per bot audio chunk, more work than
the audio itself (measured; see BENCHMARKS.md). ``RTVIObserver.send_rtvi_message``
is pipecat's hook for sending messages another way. Errors are still reported
by the RTVI processor itself.

The observer also looks at each frame once (``observe_every_push`` off), not
at every processor it passes, never at the caller's audio unless the other
end wants its level (``unread_frame_types``, which the call's worker reads:
``teamrunner.pipecat_internals.worker_observer``), and it is the call's only observer: the call's
journal observer (``teamrunner.call.observer.CallObserver``) is handed
each frame from here rather than registered beside it, because pipecat gives
every observer a queue and a task of its own and hands it every frame.

A line the runner says itself (``teamrunner.call.lines``: a greeting, a
handoff line, a nudge, a goodbye) reaches the other end as the bot's words,
the way a reply does: ``bot-llm-started``, ``bot-llm-text``,
``bot-transcription``, then ``bot-llm-stopped``. It is sent from here, when
its ``SpokenLineFrame`` is first pushed, so it keeps its place among the
call's other events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipecat.frames.frames import Frame, OutputTransportMessageUrgentFrame
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIObserver, RTVIObserverParams, RTVIProcessor
from pipecat.processors.frameworks.rtvi import models as rtvi
from pydantic import BaseModel

from teamrunner.call.caller_audio import CALLER_AUDIO
from teamrunner.frames import SpokenLineFrame


@dataclass(frozen=True)
class RTVIMessages:
    """Which RTVI messages the other end of a call's transport reads.

    Attributes:
        params: What pipecat's observer makes (its defaults: everything it makes by default).
        reads: The message types sent; None sends every one made.
    """

    params: RTVIObserverParams = field(default_factory=RTVIObserverParams)
    reads: frozenset[str] | None = None


class CallRTVI(RTVIProcessor):
    """pipecat's RTVI processor, whose observer is the call's ``CallEvents``.

    pipecat's worker adds an RTVI processor and observer to every pipeline,
    and warns on every call when a pipeline brings its own pair. Handing it
    this processor (``PipelineWorker(rtvi_processor=...)``) makes the worker
    put it at the head and ask it for its observer, so the call's observer is
    the one installed and nothing is logged.

    Args:
        output: The transport's output processor, where the messages go.
        messages: Which messages the other end reads.
        companion: An observer of first pushes to hand each frame to, first.
    """

    def __init__(
        self,
        output: FrameProcessor,
        messages: RTVIMessages,
        companion: BaseObserver | None = None,
    ) -> None:
        super().__init__()
        self.events = CallEvents(self, output, messages, companion=companion)

    def create_rtvi_observer(
        self, *, params: RTVIObserverParams | None = None, **kwargs: Any
    ) -> CallEvents:
        """The call's one ``CallEvents`` (the worker's default ``params`` do not apply)."""
        return self.events


class CallEvents(RTVIObserver):
    """pipecat's RTVI observer, delivering to the output transport without crossing the pipeline.

    Args:
        rtvi: The call's RTVI processor (it handles what the other end sends, such as send-text).
        output: The transport's output processor.
        messages: Which messages the other end reads.
        companion: An observer of first pushes to hand each frame to, first.
    """

    def __init__(
        self,
        rtvi: RTVIProcessor,
        output: FrameProcessor,
        messages: RTVIMessages,
        companion: BaseObserver | None = None,
    ) -> None:
        # Every message is decided by a frame's first push; pipecat's one exception,
        # aggregated text at the output transport, makes only bot-output and bot-tts-text.
        super().__init__(rtvi, params=messages.params, observe_every_push=False)
        self._output = output
        self._reads = messages.reads
        self._companion = companion
        unread: frozenset[type[Frame]] = (
            frozenset() if messages.params.user_audio_level_enabled else CALLER_AUDIO
        )
        if companion is not None:
            unread &= frozenset(getattr(companion, "unread_frame_types", ()))
        #: Frame types this observer never reads, so the worker need not queue them
        #: (``teamrunner.pipecat_internals.worker_observer``): caller audio, unless
        #: the other end wants the caller's audio level.
        self.unread_frame_types = unread

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
            await self.send_rtvi_message(rtvi.BotLLMStartedMessage())
            await self.send_rtvi_message(rtvi.BotLLMTextMessage(data=text))
            await self.send_rtvi_message(rtvi.BotTranscriptionMessage(data=text))
            await self.send_rtvi_message(rtvi.BotLLMStoppedMessage())
            return
        await super().on_push_frame(data)

    async def send_rtvi_message(self, model: BaseModel, exclude_none: bool = True) -> None:
        if self._reads is not None and getattr(model, "type", None) not in self._reads:
            return
        message = model.model_dump(exclude_none=exclude_none)
        await self._output.queue_frame(OutputTransportMessageUrgentFrame(message=message))
