"""Lines the runner says itself, never a model: greetings, handoff lines, nudges, goodbyes.

``Lines`` is a processor just past the output transport. ``say`` queues a
line at the head of the pipeline (through the worker pipecat handed it at
setup), so it travels in order with everything already on its way and
reaches whichever voice has the call when it gets there (the member's voice;
a transition queues its handoff line before it switches the voice). A line
is three things:

* pipecat-manager's transcript: a ``SpokenLineFrame``, which
  ``teamrunner.call.rtvi.CallEvents`` turns into the RTVI messages for the
  bot's words (to Go: ``bot-llm-text``, ``bot-transcription``,
  ``bot-llm-stopped``), in order
  with the call's other events, whether or not the call speaks;
* in a call that speaks, a ``TTSSpeakFrame`` (what pipecat.flows' ``tts_say``
  queues), spoken in the active voice and, when the line is to be
  remembered, committed to the context by pipecat as far as it was heard;
* in a call that does not speak, the line remembered as an assistant message
  straight away, since the text is all there is.

Where it sits, ``Lines`` also follows what the caller hears: the output
transport hands on each chunk of audio (and every frame queued behind audio)
once it has written it to the socket, so it feeds the media server's
playout (``playout.PlayoutClock``) exactly what left, when it left, and a
barge-in cuts it. ``say`` returns at once; ``say_and_wait`` also waits until
the caller has heard the line (a ``LinePlayedFrame`` queued behind it,
resolved here once everything before it has been played). In a call that
does not speak, a line is heard when it is sent. Only a call that says lines
of its own has ``Lines`` in its pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    LLMMessagesAppendFrame,
    OutputAudioRawFrame,
    TTSSpeakFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from teamrunner.audio import NS_PER_SEC, audio_secs
from teamrunner.call.playout import PlayoutClock
from teamrunner.frames import LinePlayedFrame, SpokenLineFrame


class Lines(FrameProcessor):
    """Says fixed lines in the call's active voice, or as text, and knows when they are heard.

    Args:
        speaks: Whether the call has a voice (without one, nothing is played).
    """

    def __init__(self, *, speaks: bool) -> None:
        super().__init__(name="Lines")
        self._speaks = speaks
        self.clock = PlayoutClock()
        self._waits: set[asyncio.Task[None]] = set()

    @property
    def speaks(self) -> bool:
        return self._speaks

    def now(self) -> float:
        """The pipeline clock, in seconds."""
        return self.get_clock().get_time() / NS_PER_SEC

    def secs_until_heard(self) -> float:
        """How long until the caller has heard everything sent so far (0 without a voice)."""
        return max(0.0, self.clock.ends_at - self.now()) if self._speaks else 0.0

    async def say(self, text: str, *, remember: bool, interruptible: bool = True) -> None:
        """Queue ``text`` to be said; returns at once.

        Args:
            text: The exact words.
            remember: Whether the line becomes part of the conversation the
                LLM sees (as an assistant message, as far as it was heard).
            interruptible: Whether a caller who talks over it cuts it off.
        """
        await self.queue(self._frames(text, remember=remember, interruptible=interruptible))

    async def say_and_wait(self, text: str | None, *, remember: bool, timeout: float) -> bool:
        """Say ``text``, not interruptibly, and wait until it has been heard.

        With no ``text``, only wait until what was said before has been heard.

        Returns:
            Whether it was heard within ``timeout`` seconds.
        """
        marker = LinePlayedFrame()
        marker.interruptible = False
        frames = self._frames(text, remember=remember, interruptible=False) if text else []
        await self.queue([*frames, marker])
        try:
            await asyncio.wait_for(asyncio.shield(marker.played), timeout)
        except TimeoutError:
            return False
        return True

    async def queue(self, frames: Sequence[Frame]) -> None:
        """Queue ``frames`` at the head of the pipeline, in order with what is on its way."""
        await self.pipeline_worker.queue_frames(list(frames))

    def _frames(self, text: str, *, remember: bool, interruptible: bool) -> list[Frame]:
        frames: list[Frame] = [SpokenLineFrame(text=text)]
        if self._speaks:
            frames.append(TTSSpeakFrame(text=text, append_to_context=remember))
        elif remember:
            frames.append(
                LLMMessagesAppendFrame(
                    messages=[{"role": "assistant", "content": text}], run_llm=False
                )
            )
        for frame in frames:
            frame.interruptible = interruptible
        return frames

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, LinePlayedFrame):
                self._resolve_when_heard(frame)
                return
            if isinstance(frame, InterruptionFrame):
                self.clock.flush(self.now())
            elif isinstance(frame, OutputAudioRawFrame):
                self.clock.add(audio_secs(frame), self.now())
        await self.push_frame(frame, direction)

    def _resolve_when_heard(self, marker: LinePlayedFrame) -> None:
        delay = self.secs_until_heard()

        async def resolve() -> None:
            if delay > 0:
                await asyncio.sleep(delay)
            if not marker.played.done():
                marker.played.set_result(None)

        task = self.create_task(resolve(), name="line-played")
        self._waits.add(task)
        task.add_done_callback(self._waits.discard)

    async def cleanup(self) -> None:
        await super().cleanup()
        for task in list(self._waits):
            await self.cancel_task(task)
