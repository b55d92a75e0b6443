"""What the text-to-speech simulators share: tone voices, pacing, and what they were asked.

``TTSSimulator`` is the base of the Cartesia and ElevenLabs simulators: a
``VoiceBook`` saying which tone each voice speaks in, the knobs for how fast
and when audio comes, the ``SpeechRequest``s received, and a command line.
It holds no protocol: each provider's messages live in its own module.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Self

from simulators.server import ConnT, ProviderSimulator, print_event, serve_until_interrupted
from simulators.voices import DEFAULT_MS_PER_CHAR, SpeechRequest, VoiceBook


class TTSSimulator(ProviderSimulator[ConnT]):
    """A text-to-speech websocket on loopback, speaking in tones.

    Args:
        voices: which tone each voice id speaks in; pin tones here.
        first_audio_delay: seconds before the first audio of each request.
        ms_per_char: how long each character of text lasts in the audio.
        chunk_delay: seconds between audio chunks, so a test can interrupt
            a generation part-way (0 sends them back to back).
        on_event: called with one readable line per notable event.

    Set ``stalled`` to make the voice accept text and send nothing back, as a
    wedged provider does; new requests then hang until it is cleared.
    """

    def __init__(
        self,
        *,
        voices: VoiceBook | None = None,
        first_audio_delay: float = 0.0,
        ms_per_char: float = DEFAULT_MS_PER_CHAR,
        chunk_delay: float = 0.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(on_event=on_event)
        self.voices = voices or VoiceBook()
        self.first_audio_delay = first_audio_delay
        self.ms_per_char = ms_per_char
        self.chunk_delay = chunk_delay
        self.stalled = False
        self.requests: list[SpeechRequest] = []
        # When the first audio of each (context id, text) went out: benchmarks
        # subtract the simulator's own time from what they measure.
        self.first_audio_at: dict[tuple[str, str], float] = {}

    def texts_for_voice(self, voice_id: str) -> list[str]:
        """Every non-empty text ``voice_id`` was asked to say, in order."""
        return [r.transcript for r in self.requests if r.voice_id == voice_id and r.transcript]

    async def record(self, request: SpeechRequest) -> None:
        """Keep a request to speak, so tests can see what each voice was asked to say."""
        self.requests.append(request)
        if request.transcript:
            self.report(f"{request.voice_id} asked to say {request.transcript!r}")
        await self.notify()

    async def hold_while_stalled(self) -> None:
        """Wait for as long as the voice is stalled (at once when it is not)."""
        while self.stalled:  # noqa: ASYNC110 - a plain flag, set and cleared by tests
            await asyncio.sleep(0.05)

    def audio_started(self, context_id: str, text: str) -> None:
        """Note that the first audio for ``text`` in ``context_id`` is going out now."""
        self.first_audio_at.setdefault((context_id, text), time.monotonic())

    @classmethod
    def main(cls, argv: list[str] | None, description: str, banner: Callable[[Self], str]) -> None:
        """Serve from the command line until interrupted; ``banner`` says where it listens."""
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=0)
        parser.add_argument("--ms-per-char", type=float, default=DEFAULT_MS_PER_CHAR)
        parser.add_argument("--first-audio-delay", type=float, default=0.0, help="seconds")
        args = parser.parse_args(argv)
        sim = cls(
            first_audio_delay=args.first_audio_delay,
            ms_per_char=args.ms_per_char,
            on_event=print_event,
        )
        serve_until_interrupted(sim, args.host, args.port, lambda: banner(sim))
