"""pipecat's media sender, without a new task and three turns of the event loop per frame.

An output transport hands every frame it must send in order with the audio
(audio chunks, and the function calls, results and response ends that the
assistant aggregator after it must see in that order) to a ``MediaSender``,
whose task takes them off a queue one at a time. pipecat takes each with
``asyncio.wait_for(queue.get(), ...)`` and writes each audio chunk with
``asyncio.wait_for(write, ...)``; on Python 3.11 pipecat swaps in
``wait_for2``'s ``wait_for``, which wraps the wait in a task of its own,
so a frame costs two new tasks and about six turns of the event loop, and
a function result waits that long behind each frame queued ahead of it.

:class:`DirectMediaSender` takes a frame that is already queued at once
(``get_nowait``), waits for one only when the queue is empty, and bounds
both waits with ``asyncio.timeout``, which needs no task. What it sends,
in what order, and when the bot is said to stop speaking are pipecat's:
it still yields to the loop once after each audio chunk, as pipecat's
sender does at least once, so an interruption is still handled between two
chunks of a long reply. A sender with a mixer (which the runner never
gives one) is pipecat's own.

Not here: which sender a transport builds (``websocket_client``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from pipecat.frames.frames import Frame, OutputAudioRawFrame
from pipecat.transports.base_output import BOT_VAD_STOP_FALLBACK_SECS, BaseOutputTransport


class DirectMediaSender(BaseOutputTransport.MediaSender):
    """pipecat's media sender, taking queued frames without a task per frame."""

    def _next_frame(self) -> AsyncGenerator[Frame, None]:
        if self._mixer:
            return super()._next_frame()
        return self._queued_frames(BOT_VAD_STOP_FALLBACK_SECS)

    async def _queued_frames(self, quiet_secs: float) -> AsyncGenerator[Frame, None]:
        """The queue's frames in order; the bot stops speaking after ``quiet_secs`` without one."""
        queue = self._audio_queue
        while True:
            try:
                frame = queue.get_nowait()
            except asyncio.QueueEmpty:
                try:
                    async with asyncio.timeout(quiet_secs):
                        frame = await queue.get()
                except TimeoutError:
                    await self._bot_stopped_speaking()
                    continue
            await self._filter_audio(frame)
            self._apply_volume(frame)
            yield frame
            queue.task_done()
            if isinstance(frame, OutputAudioRawFrame):
                # A long reply is queued at once: let an interruption in between chunks.
                await asyncio.sleep(0)

    async def _internal_write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        """Write ``frame``; a write that does not return in time writes the peer off.

        Returns:
            Whether the transport took the frame.
        """
        transport = self._transport
        if not transport.is_usable:
            return False
        timeout = self._params.audio_out_write_timeout_secs
        try:
            async with asyncio.timeout(timeout):
                return await transport.write_audio_frame(frame)
        except TimeoutError as e:
            await transport.push_error(
                f"{transport} took over {timeout}s to write audio; the peer has stopped reading",
                exception=e,
                force_treat_as_permanent=True,
            )
            return False
