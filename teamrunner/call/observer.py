"""Reading a call's frames into its journal: waits, providers' first bytes, errors, handoffs.

``CallObserver`` is one pipecat observer per call. It sees each frame once
(at its first push) and notes what the journal counts: the caller's wait
from the end of speech to the bot's first audio (pipecat's own
``UserBotLatencyObserver``, composed in rather than added beside, so the
call's frames are handed to one observer queue, not two), each provider's
time to first byte from pipecat's ``MetricsFrame``s, every provider error,
the bot's first words after a handoff, (``VoiceWatch``) a voice that
stops producing audio, and (``ActivityWatch``) how long the call has been idle.

It is not registered with the pipeline worker itself: the call's RTVI
observer (``teamrunner.call.rtvi.CallEvents``) hands it each frame, so every frame of a call
goes through one observer queue and task, not one per observer.
"""

from __future__ import annotations

from collections.abc import Mapping

from openai import APITimeoutError
from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    LLMTextFrame,
    MetricsFrame,
    TTSAudioRawFrame,
)
from pipecat.metrics.metrics import TTFBMetricsData
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.observers.user_bot_latency_observer import UserBotLatencyObserver
from pipecat.utils.http import TIMEOUT_EXCEPTIONS

from teamrunner.call.activity import ActivityWatch
from teamrunner.call.caller_audio import CALLER_AUDIO
from teamrunner.call.voice_watch import VoiceWatch
from teamrunner.observe.journal import CallJournal

# A processor's name (``OpenAILLMService#0``) to its kind and provider (``LLM``, ``openai``).
ProviderNames = Mapping[str, tuple[str, str]]


class CallObserver(BaseObserver):
    """Feeds one call's journal from the frames of its pipeline.

    It reads nothing of the caller's audio (``unread_frame_types``), so the
    call's worker does not queue those frames for it.

    Args:
        journal: The call's journal.
        providers: What each provider service of the call is, by processor name.
        speaks: Whether the call's replies are spoken (then the bot's first
            words are its first audio; otherwise its first text).
        voice: Watches the call's voice for stalls (None for a text session).
        activity: Times the call's idleness (None: it is not timed).
    """

    def __init__(
        self,
        journal: CallJournal,
        providers: ProviderNames,
        *,
        speaks: bool,
        voice: VoiceWatch | None = None,
        activity: ActivityWatch | None = None,
    ) -> None:
        super().__init__(observe_every_push=False)
        self.unread_frame_types: frozenset[type[Frame]] = CALLER_AUDIO
        self._journal = journal
        self._providers = providers
        self._words = TTSAudioRawFrame if speaks else LLMTextFrame
        self._voice = voice
        self._activity = activity
        self._latency = UserBotLatencyObserver()

        @self._latency.event_handler("on_latency_measured")
        async def on_latency(observer: UserBotLatencyObserver, seconds: float) -> None:
            journal.caller_waited(seconds)

    async def on_pipeline_started(self) -> None:
        await self._latency.on_pipeline_started()

    async def on_push_frame(self, data: FramePushed) -> None:
        await self._latency.on_push_frame(data)
        frame = data.frame
        if self._voice is not None:
            self._voice.saw(frame)
        if self._activity is not None:
            self._activity.saw(frame)
        if isinstance(frame, self._words):
            self._journal.bot_output()
        elif isinstance(frame, MetricsFrame):
            for metric in frame.data:
                if isinstance(metric, TTFBMetricsData) and metric.processor in self._providers:
                    kind, provider = self._providers[metric.processor]
                    self._journal.ttfb(kind, provider, metric.value)
        elif isinstance(frame, ErrorFrame) and frame.processor is not None:
            known = self._providers.get(frame.processor.name)
            if known is not None:
                timed_out = isinstance(frame.exception, (*TIMEOUT_EXCEPTIONS, APITimeoutError))
                self._journal.provider_error(*known, "timeout" if timed_out else "error")
