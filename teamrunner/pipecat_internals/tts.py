"""pipecat's TTS base, streaming PCM the way pipecat's own voices do.

``TTSService._stream_audio_frames_from_iterator`` turns PCM bytes into audio
frames at the pipeline's sample rate (resampling, keeping samples whole); it
is what pipecat's Piper and other local voices use, and has no public name in
pinned pipecat 1.14. ``PcmTTSService`` offers it as ``audio_frames``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

from pipecat.frames.frames import Frame
from pipecat.services.tts_service import TTSService

from teamrunner.pipecat_internals.audio_contexts import WithReadyAudioContexts


class PcmTTSService(WithReadyAudioContexts, TTSService):
    """A pipecat TTS service whose voice makes 16-bit mono PCM at a rate of its own.

    Its replies' items are read as they are (``WithReadyAudioContexts``).
    """

    async def audio_frames(
        self, pcm: AsyncIterator[bytes], *, in_sample_rate: int, context_id: str
    ) -> AsyncGenerator[Frame, None]:
        """``pcm`` as pipecat's audio frames at the pipeline's sample rate."""
        async for frame in self._stream_audio_frames_from_iterator(
            pcm, in_sample_rate=in_sample_rate, context_id=context_id
        ):
            yield frame
