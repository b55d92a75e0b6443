"""pipecat's TTS audio contexts, read without a task per item.

A pipecat voice puts each item it makes for a reply (an audio chunk, a word's
timestamp) on the reply's queue in its ``AudioContextManager``, and the
voice's playback task takes them off with ``AudioContextManager.get``, which
waits with ``asyncio.wait_for(queue.get(), timeout)``. In Python 3.11
``wait_for`` wraps the ``get`` in a task of its own, with a timer, even when
the item is already there: every chunk of the bot's voice, 25 a second while
it speaks, costs a task and the loop's turns to run it. ``ReadyAudioContexts``
takes an item that is there at once and waits for one that is not under
``asyncio.timeout``: the same item, the same ``TimeoutError`` when none comes
in time, and a keepalive still restarts the wait.

``WithReadyAudioContexts`` is put before a pipecat ``TTSService`` class; it
replaces the manager the service made (``TTSService._audio_context_manager``)
before any reply has a context. The manager's ``_contexts`` and
``_KEEPALIVE`` are the queues and the keepalive item ``get`` reads.
``tests/pipecat_internals/test_audio_contexts.py`` fails if pipecat stops
reading items through ``get``, makes its manager elsewhere, or if the voice's
frames change.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pipecat.utils.context.audio_context_manager import AudioContextManager


class ReadyAudioContexts(AudioContextManager):
    """pipecat's audio contexts, whose ``get`` makes no task for an item already queued."""

    async def get(self, context_id: str, timeout: float) -> Any:
        queue = self._contexts[context_id]
        while True:
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                async with asyncio.timeout(timeout):
                    item = await queue.get()
            if item is not self._KEEPALIVE:
                return item


class WithReadyAudioContexts:
    """Put before a pipecat ``TTSService`` class: its replies' items are read as they are."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._audio_context_manager: AudioContextManager = ReadyAudioContexts()
