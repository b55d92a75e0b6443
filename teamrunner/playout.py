"""When the caller hears the bot: the media server's playout, mirrored inside the pipeline.

Bot audio leaves for pipecat-manager unpaced (``manager/transport.py``), and
the media server plays it back to back at real time from its arrival, so
what the caller has heard at any moment lags far behind what was sent.
``PlayoutClock`` keeps that timeline. ``Playout`` sits just after the output
transport, which hands on each chunk of audio (and every frame queued behind
audio) once it has written it to the socket, so the clock is fed exactly
what left, when it left; a barge-in (when ``FLUSH_MEDIA`` drops what the
media server had queued) cuts it.

Two things read it:

* **lines that must be heard before something happens** (a goodbye before
  the call ends): ``lines.LinePlayedFrame`` is resolved once everything sent
  before it has been played;
* **idle time** (``idle.py``), which starts when the caller has heard the
  bot's last word, not when its audio was sent.

``heard.py`` keeps the same timeline for words, before the output transport.
In a call that does not speak there is no playout: a line is heard when it
is sent.
"""

from __future__ import annotations

import asyncio

from pipecat.frames.frames import AudioRawFrame, Frame, InterruptionFrame, OutputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from teamrunner.lines import LinePlayedFrame

NS_PER_SEC = 1_000_000_000


class PlayoutClock:
    """The media server's playout of bot audio: back to back, at real time, from arrival.

    Times are seconds on the pipeline's clock.
    """

    def __init__(self) -> None:
        self._end = 0.0

    @property
    def ends_at(self) -> float:
        """When everything sent so far will have been played."""
        return self._end

    def add(self, secs: float, now: float) -> tuple[float, float]:
        """Audio of ``secs`` arrives ``now``; returns when it starts and ends playing."""
        start = max(now, self._end)
        self._end = start + secs
        return start, self._end

    def flush(self, now: float) -> None:
        """A barge-in: whatever had not been played is dropped."""
        self._end = min(self._end, now)


def audio_secs(frame: AudioRawFrame) -> float:
    """The length of a frame of 16-bit PCM, the caller's or the bot's."""
    return len(frame.audio) / (2 * frame.num_channels * frame.sample_rate)


class Playout(FrameProcessor):
    """Mirrors the media server's playout of what the output transport sent; resolves lines.

    Args:
        speaks: Whether the call has a voice (without one, nothing is played).
    """

    def __init__(self, *, speaks: bool) -> None:
        super().__init__(name="Playout")
        self._speaks = speaks
        self.clock = PlayoutClock()
        self._waits: set[asyncio.Task[None]] = set()

    def now(self) -> float:
        """The pipeline clock, in seconds."""
        return self.get_clock().get_time() / NS_PER_SEC

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, LinePlayedFrame):
                self._resolve_when_played(frame)
                return
            if isinstance(frame, InterruptionFrame):
                self.clock.flush(self.now())
            elif isinstance(frame, OutputAudioRawFrame):
                self.clock.add(audio_secs(frame), self.now())
        await self.push_frame(frame, direction)

    def _resolve_when_played(self, marker: LinePlayedFrame) -> None:
        delay = self.clock.ends_at - self.now() if self._speaks else 0.0

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
