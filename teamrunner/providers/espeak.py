"""A second local voice: espeak-ng, through the library bundled in ``espeakng-loader``.

Holds a small ctypes binding to libespeak-ng (:class:`EspeakEngine`) and the
pipecat TTS service that speaks with it (:class:`EspeakTTSService`). Both work
offline with only the PyPI package: its ``libespeak-ng.so`` and its
``espeak-ng-data`` folder; no system espeak-ng, no downloads. Registering the
service under a ``tts_type`` is the TTS registry's job (``providers/tts.py``),
not this module's.

espeak-ng keeps its voice, parameters and output callback in C globals and is
not thread-safe (two syntheses at once crash the process), and the dynamic
loader hands every ``CDLL`` of the same file the same copy, so the process has
exactly one engine, :func:`shared_engine`, and every use of the library goes
through its lock. Piper's wheel links a private copy of espeak-ng for its
phonemes; that copy has its own globals and does not interfere.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import itertools
import threading
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from loguru import logger
from pipecat.frames.frames import ErrorFrame, Frame
from pipecat.services.settings import TTSSettings
from pipecat.utils.tracing.service_decorators import traced_tts

from teamrunner.errors import EspeakError, UnknownVoiceError
from teamrunner.pipecat_internals.tts import PcmTTSService

DEFAULT_VOICE = "en-us"
DEFAULT_RATE = 175
"""Words per minute; espeak-ng's own default. It accepts 80 to 450."""
DEFAULT_PITCH = 50
"""Base pitch on espeak-ng's 0-100 scale; 50 is the voice's own."""

# speak_lib.h (espeak-ng 1.52, the version espeakng-loader 0.2.4 bundles).
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # without it a bad data path calls exit(1) on the process
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_ENDPAUSE = 0x1000  # keep the sentence-final pause, so consecutive sentences don't run together
_RATE = 1
_PITCH = 3
_EE_OK = 0

_SynthCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)
_SIGNATURES: dict[str, list[type]] = {
    "espeak_Initialize": [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int],
    "espeak_SetSynthCallback": [_SynthCallback],
    "espeak_SetVoiceByName": [ctypes.c_char_p],
    "espeak_SetParameter": [ctypes.c_int, ctypes.c_int, ctypes.c_int],
    # text, size, position, position_type, end_position, flags, unique_identifier, user_data
    "espeak_Synth": [
        *(ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int),
        *(ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p),
    ],
    "espeak_ListVoices": [ctypes.c_void_p],
}
"""Argument types of the functions used; all return ``int`` but ``espeak_ListVoices``."""


class _Voice(ctypes.Structure):
    """``espeak_VOICE``, as ``espeak_ListVoices`` returns it."""

    _fields_ = (
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_void_p),  # (priority byte, NUL-terminated code)*, then 0
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    )


class EspeakEngine:
    """libespeak-ng in synchronous mode, loaded on first use and used under one lock.

    Use :func:`shared_engine` rather than constructing one: a second engine
    would drive the same C library under a different lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lib: ctypes.CDLL | None = None
        self._sample_rate = 0
        self._voices: dict[str, str] = {}
        self._variants: frozenset[str] = frozenset()
        self._chunks: list[bytes] = []
        # ctypes frees a callback whose Python object is collected, so the engine keeps it.
        self._callback = _SynthCallback(self._collect)

    def resolve_voice(self, voice: str) -> str:
        """The library's name for ``voice`` (``en-gb+f3`` -> ``gmw/en+f3``).

        Raises:
            UnknownVoiceError: when the language or the variant does not exist, since
                espeak-ng would otherwise fall back to another voice without a word.
        """
        with self._lock:
            self._load()
            return self._resolve(voice)

    def synthesize(
        self,
        text: str,
        voice: str = DEFAULT_VOICE,
        rate: int = DEFAULT_RATE,
        pitch: int = DEFAULT_PITCH,
    ) -> tuple[bytes, int]:
        """Speak ``text``; returns s16le mono PCM and its sample rate (22050 Hz).

        Blocks for the whole utterance (a few milliseconds per second of speech),
        so async callers run it in a worker thread.
        """
        _check_prosody(rate, pitch)
        encoded = text.replace("\0", "").encode("utf-8")
        with self._lock:
            lib = self._load()
            name = self._resolve(voice).encode("utf-8")
            self._check(lib.espeak_SetVoiceByName(name), f"select voice {voice!r}")
            # Selecting a voice resets rate and pitch, so they are set after it.
            self._check(lib.espeak_SetParameter(_RATE, rate, 0), "set rate")
            self._check(lib.espeak_SetParameter(_PITCH, pitch, 0), "set pitch")
            self._chunks = []
            flags = _CHARS_UTF8 | _ENDPAUSE
            status = lib.espeak_Synth(
                encoded, len(encoded) + 1, 0, _POS_CHARACTER, 0, flags, None, None
            )
            self._check(status, "synthesize")
            pcm, self._chunks = b"".join(self._chunks), []
            return pcm, self._sample_rate

    def _collect(self, wav: ctypes.c_void_p, count: int, events: int | None) -> int:
        if count > 0:
            self._chunks.append(ctypes.string_at(wav, count * 2))
        return 0  # 0 = carry on; 1 would abort the utterance

    def _load(self) -> ctypes.CDLL:
        if self._lib is not None:
            return self._lib
        import espeakng_loader

        data = Path(espeakng_loader.get_data_path())
        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        for function, argtypes in _SIGNATURES.items():
            getattr(lib, function).argtypes = argtypes
        lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_Voice))

        # A missing data folder does not fail here: the library falls back to the path
        # compiled into it (a build machine's) and reports a sample rate of 0.
        rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 0, bytes(data), _INITIALIZE_DONT_EXIT
        )
        if rate <= 0:
            raise EspeakError(f"espeak-ng could not start with its data folder {data}")
        lib.espeak_SetSynthCallback(self._callback)
        self._voices = _voice_table(lib)
        self._variants = frozenset(p.name for p in (data / "voices" / "!v").iterdir())
        self._sample_rate, self._lib = rate, lib
        logger.debug(f"espeak-ng loaded: {len(self._voices)} voice names, {rate} Hz")
        return lib

    def _resolve(self, voice: str) -> str:
        language, _, variant = voice.strip().partition("+")
        identifier = self._voices.get(language.lower())
        if identifier is None or (variant and variant not in self._variants):
            english = sorted(k for k in self._voices if k.startswith("en-") and "/" not in k)
            variants = sorted(v for v in self._variants if v[0] in "fm" and v[1:].isdigit())
            raise UnknownVoiceError(
                "espeak-ng has no such voice. Valid voices include "
                f"{', '.join(english)} and other languages such as fr-fr, de, es; "
                f"add a variant after '+', e.g. 'en-us+f3' (variants: {', '.join(variants)}, ...)"
            )
        return f"{identifier}+{variant}" if variant else identifier

    @staticmethod
    def _check(status: int, action: str) -> None:
        if status != _EE_OK:
            raise EspeakError(f"espeak-ng could not {action} (error {status})")


def _voice_table(lib: ctypes.CDLL) -> dict[str, str]:
    """Every name a caller may use for a voice, lowercased, mapped to its identifier.

    ``espeak_SetVoiceByName`` knows identifiers and names but not language codes
    (``en-gb`` is ``gmw/en``), so codes are looked up here; where several voices
    speak a code, the one the voice files rank first (lowest priority) wins.
    """
    table: dict[str, str] = {}
    ranks: dict[str, int] = {}
    voices = lib.espeak_ListVoices(None)  # NULL = every voice, less variants and mbrola
    for i in itertools.count():
        if not voices[i]:
            break
        voice = voices[i].contents
        identifier = (voice.identifier or b"").decode()
        for alias in (identifier, identifier.rsplit("/", 1)[-1], (voice.name or b"").decode()):
            table.setdefault(alias.lower(), identifier)
        address = voice.languages
        while address and (rank := ctypes.c_ubyte.from_address(address).value):
            code = ctypes.string_at(address + 1).decode()
            if rank < ranks.get(code, 256):
                ranks[code], table[code] = rank, identifier
            address += len(code) + 2
    return table


def _check_prosody(rate: int, pitch: int) -> None:
    if not 80 <= rate <= 450 or not 0 <= pitch <= 100:
        raise ValueError(f"espeak-ng rate must be 80-450 and pitch 0-100, got {rate} and {pitch}")


@functools.cache
def shared_engine() -> EspeakEngine:
    """The process's one espeak-ng engine (the library is loaded on first synthesis)."""
    return EspeakEngine()


@dataclass
class EspeakTTSSettings(TTSSettings):
    """Settings for :class:`EspeakTTSService`; ``voice`` is an espeak voice id."""


class EspeakTTSService(PcmTTSService):
    """Local text-to-speech with espeak-ng: robotic, instant, and clearly not Piper.

    The voice is an espeak voice id: a language (``en-us``, ``en-gb``,
    ``en-gb-scotland``), optionally with a variant (``en-us+f3``). Each sentence
    is synthesized whole in a worker thread, then resampled to the pipeline's
    rate by pipecat.
    """

    Settings = EspeakTTSSettings

    def __init__(
        self,
        *,
        settings: EspeakTTSSettings | None = None,
        rate: int = DEFAULT_RATE,
        pitch: int = DEFAULT_PITCH,
        engine: EspeakEngine | None = None,
        **kwargs,
    ) -> None:
        """Check the voice now, so a wrong one fails the call's start, not its first words.

        Args:
            settings: ``voice`` picks the espeak voice; ``en-us`` when not given.
            rate: Speaking rate in words per minute (80-450).
            pitch: Base pitch, 0-100.
            engine: The engine to speak with; the process's shared one by default.
            **kwargs: Passed on to pipecat's ``TTSService``.

        Raises:
            UnknownVoiceError: when the voice is not an espeak voice.
        """
        defaults = self.Settings(model=None, voice=DEFAULT_VOICE, language=None)
        if settings is not None:
            defaults.apply_update(settings)
        defaults.voice = defaults.voice or DEFAULT_VOICE  # None asks for the default too
        super().__init__(push_start_frame=True, push_stop_frames=True, settings=defaults, **kwargs)
        _check_prosody(rate, pitch)
        self._engine = engine or shared_engine()
        self._engine.resolve_voice(self.voice)
        self._rate = rate
        self._pitch = pitch

    @property
    def voice(self) -> str:
        """The espeak voice id it speaks with now (a settings update may change it)."""
        return str(cast(EspeakTTSSettings, self.settings).voice or DEFAULT_VOICE)

    def can_generate_metrics(self) -> bool:
        """TTFB and usage metrics are reported."""
        return True

    @traced_tts
    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        """Speak one piece of text as audio frames at the pipeline's sample rate."""
        try:
            await self.start_tts_usage_metrics(text)
            pcm, rate = await asyncio.to_thread(
                self._engine.synthesize, text, self.voice, self._rate, self._pitch
            )
            await self.stop_ttfb_metrics()
            async for frame in self.audio_frames(
                _pieces(pcm, rate), in_sample_rate=rate, context_id=context_id
            ):
                yield frame
        except (EspeakError, ValueError) as e:
            yield ErrorFrame(error=f"{self}: {e}")


async def _pieces(pcm: bytes, rate: int, seconds: float = 0.04) -> AsyncIterator[bytes]:
    """The utterance in short pieces, so the output arrives as frames of normal size."""
    size = max(2, int(rate * seconds) * 2)
    for start in range(0, len(pcm), size):
        yield pcm[start : start + size]
