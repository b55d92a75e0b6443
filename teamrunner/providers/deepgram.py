"""Deepgram live speech-to-text that loses none of the caller's audio while its socket is down.

pipecat's ``DeepgramSTTService`` reconnects by itself when Deepgram closes the
socket, but only after a pause (``exponential_backoff_time`` never waits less
than 4 s), and the caller's audio that comes meanwhile is dropped: its
``run_stt`` sends only while a socket is up. A word said in that gap is never
transcribed. ``GaplessDeepgramSTTService`` changes two things:

* **It reconnects at once** when caller audio finds the socket gone. pipecat's
  own retries, with their backoff and their giving up, take over when that
  attempt fails, and when the socket it made closes again within pipecat's
  ``QuickFailureTracker.min_stable_duration`` (5 s), so a socket that Deepgram
  closes straight away is not hammered.
* **It keeps the caller's audio** while no socket takes it (``HeldAudio``): up
  to ``hold_secs`` of it, the newest, and sends it on the new socket, in order
  and before anything newer. Past ``hold_secs`` the oldest audio is dropped,
  which is logged: what is kept then runs on without a hole into the live
  audio, so the recogniser hears the end of what was said whole.

Audio that comes while pipecat itself reconnects (after a settings change) is
held by pipecat, as before; it never reaches ``run_stt`` then.

Pinned pipecat 1.14 has no public seam for either change: whether a socket
is up, and reconnecting now, come from ``teamrunner.pipecat_internals.deepgram``
(pipecat's ``_connection`` and ``_do_reconnect``).
``tests/providers/test_deepgram.py`` fails if pipecat changes under either.
Like the websocket voices, it can be set up without connecting and connected
later, as a team's routers ask (``teamrunner.pipecat_internals.connecting``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncGenerator
from typing import Any

from loguru import logger
from pipecat.frames.frames import CancelFrame, EndFrame, Frame, VADUserStoppedSpeakingFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessorSetup
from pipecat.utils.network import QuickFailureTracker

from teamrunner.pipecat_internals.connecting import ConnectsWhenOpened
from teamrunner.pipecat_internals.deepgram import DeepgramSTTSocket

# How much caller audio is kept while the socket is down: a reconnect that works
# takes well under a second; one that fails first is retried 4 s later.
HOLD_SECS = 8.0

# A socket that closes sooner than this after an immediate reconnect is left to
# pipecat's own retries, with their backoff (pipecat's notion of a quick failure).
STABLE_SECS = QuickFailureTracker().min_stable_duration

_BYTES_PER_SAMPLE = 2  # the caller's audio is 16-bit mono PCM


class HeldAudio:
    """Caller audio kept in order, at most ``limit_bytes`` of it: the newest.

    Args:
        limit_bytes: How much is kept; adding past it drops the oldest chunks.
    """

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._chunks: deque[bytes] = deque()
        self._size = 0
        #: Bytes dropped past the limit since the audio was last taken.
        self.dropped_bytes = 0

    def __len__(self) -> int:
        """How many bytes are held."""
        return self._size

    def add(self, chunk: bytes) -> None:
        """Keep ``chunk`` after what is held, dropping the oldest past the limit."""
        self._chunks.append(chunk)
        self._size += len(chunk)
        while self._size > self.limit_bytes:
            oldest = self._chunks.popleft()
            self._size -= len(oldest)
            self.dropped_bytes += len(oldest)

    def take(self) -> list[bytes]:
        """Everything held, oldest first; the hold is empty afterwards."""
        chunks = list(self._chunks)
        self._chunks.clear()
        self._size = 0
        self.dropped_bytes = 0
        return chunks


class GaplessDeepgramSTTService(ConnectsWhenOpened, DeepgramSTTSocket):
    """pipecat's Deepgram STT, reconnecting at once and keeping the caller's audio meanwhile.

    Args:
        hold_secs: How much of the caller's audio is kept while no socket is up.
        **kwargs: ``DeepgramSTTService``'s own arguments.
    """

    def __init__(self, *, hold_secs: float = HOLD_SECS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._hold_secs = hold_secs
        self._held = HeldAudio(0)
        self._reconnect_task: asyncio.Task[None] | None = None
        self._reconnected_at: float | None = None

    async def setup(self, setup: FrameProcessorSetup) -> None:  # type: ignore[override]
        await super().setup(setup)
        self._held = HeldAudio(int(self._hold_secs * self.sample_rate * _BYTES_PER_SAMPLE))

    async def stop(self, frame: EndFrame) -> None:
        await self._cancel_reconnect()
        await super().stop(frame)

    async def cancel(self, frame: CancelFrame) -> None:
        await self._cancel_reconnect()
        await super().cancel(frame)

    async def cleanup(self) -> None:
        await self._cancel_reconnect()
        if len(self._held):
            logger.warning(
                f"{self}: {self._secs(len(self._held)):.1f} s of caller audio kept while "
                "the socket was down was never sent: the call ended first"
            )
        await super().cleanup()

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        """Send ``audio`` after whatever was kept, or keep it and reconnect at once."""
        if self.socket_up() and await self._send_held() and await self._send(audio):
            yield None
            return
        # No socket took it: keep it for the next one.
        self._hold(audio)
        self._reconnect_at_once()
        yield None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        # pipecat asks Deepgram to finalize the caller's words here: send the kept ones first.
        if isinstance(frame, VADUserStoppedSpeakingFrame) and len(self._held) and self.socket_up():
            await self._send_held()
        await super().process_frame(frame, direction)

    async def _send(self, audio: bytes) -> bool:
        """Send ``audio`` as pipecat does; False when the socket was gone or went with it."""
        async for _ in super().run_stt(audio):
            pass
        return self.socket_up()

    async def _send_held(self) -> bool:
        """Send the audio kept while the socket was down; False if the socket went meanwhile."""
        if not len(self._held):
            return True
        dropped = self._held.dropped_bytes
        chunks = self._held.take()
        for index, chunk in enumerate(chunks):
            if not await self._send(chunk):
                for unsent in chunks[index:]:
                    self._hold(unsent)
                return False
        kept = self._secs(sum(map(len, chunks)))
        gone = f"; {self._secs(dropped):.1f} s before it were dropped" if dropped else ""
        logger.info(
            f"{self}: sent {kept:.1f} s of caller audio kept while the socket was down{gone}"
        )
        return True

    def _hold(self, audio: bytes) -> None:
        dropping = self._held.dropped_bytes
        self._held.add(audio)
        if self._held.dropped_bytes and not dropping:
            logger.warning(
                f"{self}: the socket has been down for more than {self._hold_secs:g} s "
                "of caller audio; dropping the oldest audio kept"
            )

    def _reconnect_at_once(self) -> None:
        """Start reconnecting now, unless under way or the last such socket failed quickly."""
        if self._reconnect_task is not None:
            return
        last = self._reconnected_at
        if last is not None and time.monotonic() - last < STABLE_SECS:
            return  # pipecat's own retries are on it, with their backoff
        self._reconnect_task = self.create_task(self._reconnect_now(), f"{self}::reconnect_now")

    async def _reconnect_now(self) -> None:
        logger.warning(f"{self}: the socket to Deepgram is gone; reconnecting at once")
        try:
            await self.reconnect_socket()
        except ConnectionError as e:
            logger.warning(f"{self}: {e}")
        finally:
            self._reconnected_at = time.monotonic()
            self._reconnect_task = None

    async def _cancel_reconnect(self) -> None:
        if self._reconnect_task is not None:
            await self.cancel_task(self._reconnect_task)
            self._reconnect_task = None

    def _secs(self, size: int) -> float:
        return size / (self.sample_rate * _BYTES_PER_SAMPLE)
