"""What the text-to-speech simulators share: tone voices, pacing, and what they were asked.

``TTSSimulator`` is the base of the Cartesia and ElevenLabs simulators: a
``VoiceBook`` saying which tone each voice speaks in, the knobs for how fast
and when audio comes, the ``SpeechRequest``s received, and a command line.
It holds no protocol: each provider's messages live in its own module.

By default a reply's audio goes out as fast as it is made, which is what a
test wants. ``Pacing`` makes the voice stream the way the real providers do,
which is what a benchmark of a loaded runner wants: the first chunk after
about 150 ms, then audio at 1.5 times real time, so a two-second reply is
spread over about 1.5 s instead of arriving as one burst of chunks.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

from simulators.server import ConnT, ProviderSimulator, print_event, serve_until_interrupted
from simulators.voices import DEFAULT_MS_PER_CHAR, SpeechRequest, VoiceBook


@dataclass(frozen=True)
class Pacing:
    """How a streaming voice times its audio: the first chunk, then a steady rate.

    Attributes:
        first_audio_secs: From the text's arrival to its first audio chunk.
        speed: Audio sent per second of wall time, in seconds (1.5: half again real time).
    """

    first_audio_secs: float = 0.150
    speed: float = 1.5


#: What Cartesia and ElevenLabs streaming voices measure like: first audio in about
#: 150 ms, then faster than real time, but not by much.
PROVIDER_PACING = Pacing()


class AudioStream:
    """When each chunk of one reply may go out: as fast as possible, or paced.

    Chunks are due at absolute times from the reply's start, so a slow event
    loop does not make a paced voice drift further and further behind.
    """

    def __init__(self, sim: TTSSimulator[Any]) -> None:
        self._sim = sim
        self._started = time.monotonic()

    async def before_chunk(self, index: int, audio_secs_sent: float) -> None:
        """Wait until chunk ``index`` is due, ``audio_secs_sent`` of audio after the first."""
        pacing = self._sim.pacing
        if pacing is not None:
            due = self._started + pacing.first_audio_secs + audio_secs_sent / pacing.speed
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        elif index == 0:
            await asyncio.sleep(self._sim.first_audio_delay)
        else:
            await asyncio.sleep(self._sim.chunk_delay)


class TTSSimulator(ProviderSimulator[ConnT]):
    """A text-to-speech websocket on loopback, speaking in tones.

    Args:
        voices: which tone each voice id speaks in; pin tones here.
        first_audio_delay: seconds before the first audio of each request.
        ms_per_char: how long each character of text lasts in the audio.
        chunk_delay: seconds between audio chunks, so a test can interrupt
            a generation part-way (0 sends them back to back).
        pacing: stream like a real provider instead (``PROVIDER_PACING``);
            when set, ``first_audio_delay`` and ``chunk_delay`` are not used.
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
        pacing: Pacing | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(on_event=on_event)
        self.voices = voices or VoiceBook()
        self.first_audio_delay = first_audio_delay
        self.ms_per_char = ms_per_char
        self.chunk_delay = chunk_delay
        self.pacing = pacing
        self.stalled = False
        self.requests: list[SpeechRequest] = []
        # When the first audio of each (context id, text) went out: benchmarks
        # subtract the simulator's own time from what they measure.
        self.first_audio_at: dict[tuple[str, str], float] = {}
        # And when the last went out: a benchmark asks when a voice was done with a line.
        self.last_audio_at: dict[tuple[str, str], float] = {}

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

    def stream(self) -> AudioStream:
        """The timing of one reply's audio, from now."""
        return AudioStream(self)

    def audio_started(self, context_id: str, text: str) -> None:
        """Note that the first audio for ``text`` in ``context_id`` is going out now."""
        self.first_audio_at.setdefault((context_id, text), time.monotonic())

    def audio_finished(self, context_id: str, text: str) -> None:
        """Note that the last audio for ``text`` in ``context_id`` has just gone out."""
        self.last_audio_at[(context_id, text)] = time.monotonic()

    @classmethod
    def main(cls, argv: list[str] | None, description: str, banner: Callable[[Self], str]) -> None:
        """Serve from the command line until interrupted; ``banner`` says where it listens."""
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=0)
        parser.add_argument("--ms-per-char", type=float, default=DEFAULT_MS_PER_CHAR)
        parser.add_argument("--first-audio-delay", type=float, default=0.0, help="seconds")
        parser.add_argument(
            "--paced",
            action="store_true",
            help="stream like a real provider: first audio after 150 ms, then 1.5x real time",
        )
        args = parser.parse_args(argv)
        sim = cls(
            first_audio_delay=args.first_audio_delay,
            ms_per_char=args.ms_per_char,
            pacing=PROVIDER_PACING if args.paced else None,
            on_event=print_event,
        )
        serve_until_interrupted(sim, args.host, args.port, lambda: banner(sim))
