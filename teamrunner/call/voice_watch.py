"""Noticing a voice that stops producing audio.

A TTS provider can accept a call's text and then send nothing (a wedged
websocket, an overloaded voice): pipecat waits, the caller hears silence,
and nothing reports it. ``VoiceWatch`` is told of the frames the call's
observer sees. Once the bot has handed its voice everything it is to say
(the LLM's reply has ended, or a line was queued to speak), the voice has
``RUNNER_TTS_TIMEOUT_SECS`` to produce each next chunk of audio, until it
says the utterance is over; a caller who barges in cancels the wait. If the
voice falls silent for longer, the utterance is abandoned: the stall is
counted, pipecat-manager is told with an RTVI ``error``, and the call goes
on (the next reply asks the voice again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from loguru import logger
from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStoppedFrame,
)


class VoiceWatch:
    """Times a call's voice between the end of what it was given and each chunk of audio.

    Args:
        timeout: How long the voice may be silent while it has something to say.
        on_stall: Called once per abandoned utterance.
    """

    def __init__(self, timeout: float, on_stall: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._timeout = timeout
        self._on_stall = on_stall
        self._pending_text = False  # text was given since the last utterance ended
        self._deadline: asyncio.TimerHandle | None = None
        self._stalls: set[asyncio.Task[None]] = set()

    def saw(self, frame: Frame) -> None:
        if isinstance(frame, LLMTextFrame) and frame.text.strip():
            self._pending_text = True
        elif isinstance(frame, TTSSpeakFrame) and frame.text.strip():
            self._pending_text = True
            self._arm()
        elif isinstance(frame, LLMFullResponseEndFrame):
            if self._pending_text:
                self._arm()
        elif isinstance(frame, TTSAudioRawFrame):
            if self._deadline is not None:
                self._arm()  # a chunk came: the next one has as long again
        elif isinstance(frame, (TTSStoppedFrame, InterruptionFrame)):
            self._pending_text = False
            self._disarm()

    def close(self) -> None:
        self._disarm()
        for task in self._stalls:
            task.cancel()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = asyncio.get_running_loop().call_later(self._timeout, self._stalled)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _stalled(self) -> None:
        self._deadline = None
        self._pending_text = False
        logger.warning(f"the voice produced no audio for {self._timeout:g}s; abandoning it")
        task = asyncio.get_running_loop().create_task(self._on_stall())
        self._stalls.add(task)
        task.add_done_callback(self._stalls.discard)
