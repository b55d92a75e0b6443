"""The audible signature of a simulated voice: a pure tone per voice id.

The text-to-speech simulators do not speak. Each voice id is given a tone from
a fixed ladder of well-separated frequencies, and "speaking" a text means
playing that tone for every word, ``ms_per_char`` per character, with the
spaces silent. A test can then tell who spoke from the audio alone
(``identify_voice``), even after pipecat has resampled it, and can check
durations and word timestamps against ``word_timings``.

This module also holds ``SpeechRequest``, the record both TTS simulators keep
of what a voice was asked to say. It holds no protocol and no server.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from simulators.audio import encode_samples, rms_s16le, s16le_to_float

#: Twelve tones from 300 Hz to 2000 Hz, each ~19% above the last (geometric),
#: all below the 4 kHz Nyquist limit of 8 kHz telephony audio.
TONE_LADDER_HZ: tuple[float, ...] = tuple(
    float(round(300 * (2000 / 300) ** (step / 11))) for step in range(12)
)

#: Hash salt for ``ladder_tone``. Fixed, so a voice keeps its tone across runs
#: and machines; this value makes the ids tests commonly use ("voice-greeter",
#: "voice-billing", "voice-support", "greeter", "billing", "support",
#: "voice-a"/"voice-b", "v1"/"v2") land on distinct tones.
_TONE_SALT = b"simvoice1:"

#: How far (relative) a measured frequency may sit from a voice's tone and
#: still be attributed to it; the ladder's steps are ~19% apart.
TONE_TOLERANCE = 0.04

#: Default speaking pace: short, so tests run quickly.
DEFAULT_MS_PER_CHAR = 40.0

#: Peak amplitude of the tone, as a fraction of full scale.
_AMPLITUDE = 0.3

#: Fade in and out at each word's edges, so words don't click.
_FADE_SECONDS = 0.005

#: Below this RMS (16-bit scale, about -60 dBFS) audio counts as silence.
_SILENCE_RMS = 33.0


@dataclass(frozen=True)
class WordTiming:
    """Where one word of a synthesized text sits in its audio, in seconds."""

    word: str
    start: float
    end: float


@dataclass(frozen=True)
class SpeechRequest:
    """One request a TTS simulator received to speak text in a voice."""

    voice_id: str
    context_id: str
    transcript: str
    model_id: str | None
    language: str | None
    sample_rate: int
    encoding: str
    received_at: float = field(default_factory=time.monotonic)


def ladder_tone(voice_id: str) -> float:
    """The tone a voice id gets when none is pinned: a rung of the ladder by sha256."""
    digest = hashlib.sha256(_TONE_SALT + voice_id.encode("utf-8")).digest()
    return TONE_LADDER_HZ[int.from_bytes(digest[:8], "big") % len(TONE_LADDER_HZ)]


def samples_per_char(sample_rate: int, ms_per_char: float) -> int:
    """Samples one character lasts; whole samples, so chunks can end on characters."""
    return max(1, round(sample_rate * ms_per_char / 1000))


def word_timings(text: str, sample_rate: int, ms_per_char: float) -> list[WordTiming]:
    """Where each word (a run of non-space characters) of ``text`` is in its audio."""
    step = samples_per_char(sample_rate, ms_per_char)
    timings: list[WordTiming] = []
    position = 0
    for word in text.split():
        position = text.index(word, position)
        end = position + len(word)
        timings.append(WordTiming(word, position * step / sample_rate, end * step / sample_rate))
        position = end
    return timings


def char_seconds(sample_rate: int, ms_per_char: float) -> float:
    """How long one character lasts in audio at ``sample_rate``."""
    return samples_per_char(sample_rate, ms_per_char) / sample_rate


def tone_samples(text: str, hz: float, sample_rate: int, ms_per_char: float) -> np.ndarray:
    """Float samples of ``text`` spoken as a tone at ``hz``: words sound, spaces are silent."""
    step = samples_per_char(sample_rate, ms_per_char)
    samples = np.zeros(len(text) * step, dtype=np.float32)
    fade = max(1, int(_FADE_SECONDS * sample_rate))
    position = 0
    for word in text.split():
        position = text.index(word, position)
        length = len(word) * step
        t = np.arange(length, dtype=np.float64) / sample_rate
        word_wave = _AMPLITUDE * np.sin(2 * np.pi * hz * t)
        edge = min(fade, length // 4)
        if edge > 0:
            ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, edge))
            word_wave[:edge] *= ramp
            word_wave[-edge:] *= ramp[::-1]
        samples[position * step : position * step + length] = word_wave
        position += len(word)
    return samples


def dominant_hz(pcm: bytes, sample_rate: int) -> float:
    """The strongest frequency in s16le PCM (FFT peak), or 0.0 for silence."""
    if rms_s16le(pcm) < _SILENCE_RMS:
        return 0.0
    samples = s16le_to_float(pcm)
    # Zero-pad to at least one second so the bins are 1 Hz apart or finer.
    n_fft = 1 << max(samples.size, sample_rate).bit_length()
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(samples.size), n=n_fft))
    spectrum[:2] = 0.0  # ignore DC
    peak = int(np.argmax(spectrum))
    offset = 0.0
    if 0 < peak < spectrum.size - 1:
        left, centre, right = spectrum[peak - 1], spectrum[peak], spectrum[peak + 1]
        denominator = left - 2 * centre + right
        if denominator != 0:
            offset = 0.5 * (left - right) / denominator
    return (peak + offset) * sample_rate / n_fft


class VoiceBook:
    """Which tone each voice id speaks in: pinned tones first, else the hashed ladder.

    Pin a tone with ``register_voice`` (or the ``tones`` mapping) whenever a
    test needs two voices to be told apart, so it never depends on the hash.
    """

    def __init__(self, tones: Mapping[str, float] | None = None) -> None:
        self._pinned: dict[str, float] = {}
        for voice_id, hz in (tones or {}).items():
            self.register_voice(voice_id, hz)

    def register_voice(self, voice_id: str, hz: float) -> None:
        """Pin ``voice_id`` to speak at ``hz``.

        Raises:
            ValueError: if ``hz`` is not a positive frequency.
        """
        if hz <= 0:
            raise ValueError(f"Voice {voice_id!r}: tone must be a positive frequency, got {hz}.")
        self._pinned[voice_id] = float(hz)

    def tone_hz(self, voice_id: str) -> float:
        """The frequency ``voice_id`` speaks at."""
        return self._pinned.get(voice_id, ladder_tone(voice_id))

    def synthesize(
        self,
        text: str,
        voice_id: str,
        sample_rate: int,
        ms_per_char: float = DEFAULT_MS_PER_CHAR,
        encoding: str = "pcm_s16le",
    ) -> bytes:
        """Mono audio of ``voice_id`` saying ``text``: ``len(text)`` characters long."""
        samples = tone_samples(text, self.tone_hz(voice_id), sample_rate, ms_per_char)
        return encode_samples(samples, encoding)

    def identify_voice(self, pcm: bytes, sample_rate: int, candidates: Iterable[str]) -> str | None:
        """The candidate whose tone the s16le ``pcm`` is in; None for silence or no match.

        Raises:
            ValueError: if two candidates share a tone, since the audio can't
                tell them apart; pin distinct tones with ``register_voice``.
        """
        tones = {voice_id: self.tone_hz(voice_id) for voice_id in candidates}
        _require_distinct_tones(tones)
        hz = dominant_hz(pcm, sample_rate)
        if hz == 0.0:
            return None
        best = min(tones, key=lambda voice_id: abs(tones[voice_id] - hz), default=None)
        if best is None or abs(tones[best] - hz) > TONE_TOLERANCE * tones[best]:
            return None
        return best


def _require_distinct_tones(tones: Mapping[str, float]) -> None:
    ordered = sorted(tones.items(), key=lambda item: item[1])
    for (lower_id, lower_hz), (upper_id, upper_hz) in itertools.pairwise(ordered):
        if upper_hz - lower_hz <= 2 * TONE_TOLERANCE * lower_hz:
            raise ValueError(
                f"Voices {lower_id!r} ({lower_hz:g} Hz) and {upper_id!r} ({upper_hz:g} Hz) "
                "sound alike; pin distinct tones with VoiceBook.register_voice."
            )


def tone_hz(voice_id: str) -> float:
    """The ladder tone of ``voice_id`` (no pinned tones; use a ``VoiceBook`` for those)."""
    return VoiceBook().tone_hz(voice_id)


def synthesize(
    text: str, voice_id: str, sample_rate: int, ms_per_char: float = DEFAULT_MS_PER_CHAR
) -> bytes:
    """s16le mono audio of ``voice_id`` saying ``text`` in its ladder tone."""
    return VoiceBook().synthesize(text, voice_id, sample_rate, ms_per_char)


def identify_voice(pcm: bytes, sample_rate: int, candidates: Iterable[str]) -> str | None:
    """The candidate (by ladder tone) that ``pcm`` was spoken in, or None."""
    return VoiceBook().identify_voice(pcm, sample_rate, candidates)
