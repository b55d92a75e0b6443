"""The fixed end-of-turn rule, with its grace timed in the caller's audio.

pipecat's ``SpeechTimeoutUserTurnStopStrategy`` ends a turn once the VAD has
stopped and a further ``user_speech_timeout`` of *wall-clock* time has passed
with no more speech. The VAD, though, judges audio that has already waited in
the pipeline's queues: when the machine is busy (a local recogniser running,
many calls on one core) the audio of the caller's next word is still queued
when the wall clock runs out, and one sentence with a pause in it is cut into
two turns. Counting the grace in audio that has actually reached the VAD asks
the question the rule means ("did the caller say nothing more for this long?")
however late the audio is. Speech the VAD is still confirming when the grace
runs out (it reports speech only after ``start_secs`` of it) holds the turn
open until the VAD decides, so a caller who resumed inside the grace is not cut
off. A wall-clock limit remains, longer than the grace, for a line whose audio
stops coming altogether.

The rest of the rule is pipecat's: a turn needs a transcript; a finalized
transcript, or the STT's advertised p99 latency after the stop, says the STT has
sent everything; a transcript with no VAD stop (the VAD missed short speech)
starts the grace from the transcript. One change: pipecat takes any finalized
transcript as the last, but a recogniser that transcribes each stretch between
the VAD's stops, one after another, can deliver the first stretch's after the
second has ended, and the turn would end without the second. Here the STT has
sent everything once a final transcript has come for every stop of the turn.

The rule also tells the recogniser, upstream, what became of each stretch of
speech (``StretchVerdictFrame``): joined to the next when the caller spoke
again inside the grace, alone when the grace passed. Only the rule knows,
since it counts the grace in audio the VAD has judged, and the recogniser,
before the VAD in the pipeline, has always heard more. A recogniser of
stretches then transcribes a joined turn whole instead of in fragments.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_stop import BaseUserTurnStopStrategy

from teamrunner.audio import audio_secs
from teamrunner.frames import NoWordsFrame, StretchVerdictFrame

# How much longer than the grace the wall clock may run when no audio comes at all.
SILENT_LINE_SLACK_SECS = 1.0


class HeardSilenceTurnStop(BaseUserTurnStopStrategy):
    """Ends a turn after ``grace_secs`` of caller audio with no speech in it."""

    def __init__(
        self, *, grace_secs: float, hears_speech: Callable[[], bool] = lambda: False
    ) -> None:
        super().__init__()
        self._grace = grace_secs
        self._hears_speech = hears_speech
        self._stt_p99 = 0.0
        self._text = ""
        self._speaking = False
        self._vad_stopped = False
        # VAD stops this turn whose final transcript has not come yet.
        self._unheard_stops = 0
        # A VAD stop the recogniser has not been told the fate of.
        self._undecided_stretch = False
        # The grace: None while not counting, else the caller audio heard since it began.
        self._heard: float | None = None
        self._grace_done = False
        self._stt_done = False
        self._wall_limit: asyncio.Task[None] | None = None
        self._stt_wait: asyncio.Task[None] | None = None

    async def handle_user_turn_started(self) -> None:
        # The VAD's state is the line's, not the turn's: a turn can begin mid-speech.
        self._text = ""
        self._unheard_stops = 0
        await self._forget_progress()

    async def handle_user_turn_stopped(self) -> None:
        if self._undecided_stretch:
            await self._tell_recogniser(joined=False)
        self._text = ""
        self._speaking = False
        self._unheard_stops = 0
        await self._forget_progress()

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._cancel_waits()

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        if isinstance(frame, InputAudioRawFrame):
            await self._hear(frame)
        elif isinstance(frame, STTMetadataFrame):
            self._stt_p99 = frame.ttfs_p99_latency
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            # A stretch still undecided is inside its grace: the caller went on.
            await self._tell_recogniser(joined=self._undecided_stretch)
            self._speaking = True
            await self._forget_progress()
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            await self._vad_stop(frame)
        elif isinstance(frame, TranscriptionFrame):
            await self._transcript(frame)
        elif isinstance(frame, NoWordsFrame):
            await self._stop_answered()
            await self._maybe_end()
        return ProcessFrameResult.CONTINUE

    async def _hear(self, frame: InputAudioRawFrame) -> None:
        if self._heard is None:
            return
        self._heard += audio_secs(frame)
        if self._heard >= self._grace and not self._hears_speech():
            await self._grace_over()

    async def _vad_stop(self, frame: VADUserStoppedSpeakingFrame) -> None:
        self._speaking = False
        self._vad_stopped = True
        self._undecided_stretch = True
        await self._start_grace()
        await self._cancel_stt_wait()
        self._unheard_stops += 1
        stt_wait = max(0.0, self._stt_p99 - frame.stop_secs)
        self._stt_done = stt_wait <= 0
        if not self._stt_done:
            self._stt_wait = self.task_manager.create_task(
                self._stt_wait_out(stt_wait), f"{self}::stt_wait"
            )

    async def _transcript(self, frame: TranscriptionFrame) -> None:
        self._text += frame.text
        if frame.finalized:
            await self._stop_answered()
        if self._grace_done and self._stt_done:
            await self._maybe_end()
            return
        if not self._speaking and not self._vad_stopped:
            # Speech the VAD never saw: the grace runs from the transcript.
            self._stt_done = True
            await self._start_grace()

    async def _stop_answered(self) -> None:
        """A final transcript (or word that there were none) for one VAD stop.

        One comes for each stop, in order: pipecat asks a streaming STT to
        finalize there, and a recogniser of stretches transcribes the stretch
        that ended there.
        """
        self._unheard_stops = max(0, self._unheard_stops - 1)
        if self._unheard_stops == 0 and not self._stt_done:
            self._stt_done = True
            await self._cancel_stt_wait()

    async def _start_grace(self) -> None:
        self._heard = 0.0
        self._grace_done = False
        await self._cancel_wall_limit()
        self._wall_limit = self.task_manager.create_task(
            self._wall_limit_out(self._grace + SILENT_LINE_SLACK_SECS), f"{self}::wall_limit"
        )

    async def _grace_over(self) -> None:
        self._heard = None
        self._grace_done = True
        await self._cancel_wall_limit()
        if self._undecided_stretch:
            await self._tell_recogniser(joined=False)
        await self._maybe_end()

    async def _wall_limit_out(self, secs: float) -> None:
        await asyncio.sleep(secs)
        self._wall_limit = None
        await self._grace_over()

    async def _stt_wait_out(self, secs: float) -> None:
        await asyncio.sleep(secs)
        self._stt_wait = None
        self._stt_done = True
        await self._maybe_end()

    async def _tell_recogniser(self, *, joined: bool) -> None:
        """Send the last stretch's verdict (or, with none waiting, word that verdicts come)."""
        self._undecided_stretch = False
        await self.push_frame(StretchVerdictFrame(joined=joined), FrameDirection.UPSTREAM)

    async def _maybe_end(self) -> None:
        if self._speaking or not self._text:
            return
        if self._grace_done and self._stt_done:
            await self.trigger_user_turn_stopped()

    async def _forget_progress(self) -> None:
        self._vad_stopped = False
        self._heard = None
        self._grace_done = False
        self._stt_done = False
        await self._cancel_waits()

    async def _cancel_waits(self) -> None:
        await self._cancel_wall_limit()
        await self._cancel_stt_wait()

    async def _cancel_wall_limit(self) -> None:
        await self._cancel(self._wall_limit)
        self._wall_limit = None

    async def _cancel_stt_wait(self) -> None:
        await self._cancel(self._stt_wait)
        self._stt_wait = None

    async def _cancel(self, task: asyncio.Task[None] | None) -> None:
        # A wait that ends the turn is itself running the cancellations that follow.
        if task is not None and task is not asyncio.current_task():
            await self.task_manager.cancel_task(task)
