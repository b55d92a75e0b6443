"""Lines the runner says itself, never a model: greetings, handoff lines, nudges, goodbyes.

``Lines.say`` queues a line at the head of the pipeline, so it travels in
order with everything already on its way and reaches whichever voice has the
call when it gets there (the member's voice; a transition queues its handoff
line before it switches the voice). A line is three things:

* pipecat-manager's transcript: a ``SpokenLineFrame``, which
  ``ManagerEvents`` turns into the RTVI messages Go reads for the bot's words
  (``bot-llm-text``, ``bot-transcription``, ``bot-llm-stopped``), in order
  with the call's other events, whether or not the call speaks;
* in a call that speaks, a ``TTSSpeakFrame`` (what pipecat.flows' ``tts_say``
  queues), spoken in the active voice and, when the line is to be
  remembered, committed to the context by pipecat as far as it was heard;
* in a call that does not speak, the line remembered as an assistant message
  straight away, since the text is all there is.

``say`` returns at once; ``say_and_wait`` also waits until the caller has
heard the line (``LinePlayedFrame``, resolved by ``playout.Playout``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pipecat.frames.frames import (
    ControlFrame,
    DataFrame,
    Frame,
    LLMMessagesAppendFrame,
    TTSSpeakFrame,
)
from pipecat.pipeline.worker import PipelineWorker


@dataclass
class SpokenLineFrame(DataFrame):
    """A line the runner says, for pipecat-manager's transcript; nothing else acts on it."""

    text: str


@dataclass
class LinePlayedFrame(ControlFrame):
    """Follows a line; resolved once the caller has heard everything said before it.

    A voice holds it behind the audio it is still making, and ``Playout``
    resolves it when the media server will have played that audio.
    """

    played: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Lines:
    """Says fixed lines in the call's active voice, or as text when the call does not speak.

    Args:
        speaks: Whether the call has a voice.
    """

    def __init__(self, *, speaks: bool) -> None:
        self._speaks = speaks
        self._worker: PipelineWorker | None = None

    @property
    def speaks(self) -> bool:
        return self._speaks

    def attach(self, worker: PipelineWorker) -> None:
        """Say lines into ``worker``'s pipeline (the call's, once it is built)."""
        self._worker = worker

    async def say(self, text: str, *, remember: bool, interruptible: bool = True) -> None:
        """Queue ``text`` to be said; returns at once.

        Args:
            text: The exact words.
            remember: Whether the line becomes part of the conversation the
                LLM sees (as an assistant message, as far as it was heard).
            interruptible: Whether a caller who talks over it cuts it off.
        """
        await self._queue(self._frames(text, remember=remember, interruptible=interruptible))

    async def say_and_wait(self, text: str | None, *, remember: bool, timeout: float) -> bool:
        """Say ``text``, not interruptibly, and wait until it has been heard.

        With no ``text``, only wait until what was said before has been heard.

        Returns:
            Whether it was heard within ``timeout`` seconds.
        """
        marker = LinePlayedFrame()
        marker.interruptible = False
        frames = self._frames(text, remember=remember, interruptible=False) if text else []
        await self._queue([*frames, marker])
        try:
            await asyncio.wait_for(asyncio.shield(marker.played), timeout)
        except TimeoutError:
            return False
        return True

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

    async def _queue(self, frames: list[Frame]) -> None:
        assert self._worker is not None, "the call's pipeline is not built yet"
        for frame in frames:
            await self._worker.queue_frame(frame)
