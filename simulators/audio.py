"""PCM helpers the simulators share: converting samples to and from the wire encodings.

Holds only sample arithmetic on mono audio (signed 16-bit little-endian,
32-bit float, 8-bit mu-law) and a loudness measure. It is the one place s16le
bytes become float samples and back; ``voices.py`` and ``wav.py`` build on it.
It knows nothing of any provider's protocol, of WAV files or of what a voice
sounds like.
"""

from __future__ import annotations

import numpy as np

#: Encodings ``encode_samples`` can produce, by the names Cartesia uses for them.
PCM_S16LE = "pcm_s16le"
PCM_F32LE = "pcm_f32le"
PCM_MULAW = "pcm_mulaw"
SUPPORTED_ENCODINGS: frozenset[str] = frozenset({PCM_S16LE, PCM_F32LE, PCM_MULAW})

_MULAW_BIAS = 0x84
_MULAW_CLIP = 32635


def s16le_to_float(pcm: bytes) -> np.ndarray:
    """Decode signed 16-bit little-endian PCM into float64 samples in [-1, 1).

    A trailing odd byte is dropped. ``float_to_s16le`` gives the bytes back exactly.
    """
    usable = len(pcm) - len(pcm) % 2
    return np.frombuffer(pcm[:usable], dtype="<i2").astype(np.float64) / 32768.0


def float_to_s16le(samples: np.ndarray) -> bytes:
    """Encode float samples in [-1, 1] as signed 16-bit little-endian PCM.

    Samples outside the range are clipped; scaling is by 32768, so the round trip
    through ``s16le_to_float`` is lossless.
    """
    clipped = np.clip(samples, -1.0, 32767 / 32768)
    return (clipped * 32768.0).astype("<i2").tobytes()


def float_to_mulaw(samples: np.ndarray) -> bytes:
    """Encode float samples as G.711 mu-law bytes (the telephony encoding)."""
    pcm = np.clip(samples * 32768.0, -32768, 32767).astype(np.int32)
    sign = np.where(pcm < 0, 0x80, 0x00)
    magnitude = np.minimum(np.abs(pcm), _MULAW_CLIP) + _MULAW_BIAS
    exponent = np.floor(np.log2(magnitude)).astype(np.int32) - 7
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    encoded = ~(sign | (exponent << 4) | mantissa) & 0xFF
    return encoded.astype(np.uint8).tobytes()


def encode_samples(samples: np.ndarray, encoding: str) -> bytes:
    """Encode float samples in one of ``SUPPORTED_ENCODINGS``.

    Raises:
        ValueError: naming the encoding and the ones that are supported.
    """
    if encoding == PCM_S16LE:
        return float_to_s16le(samples)
    if encoding == PCM_F32LE:
        return np.asarray(samples, dtype="<f4").tobytes()
    if encoding == PCM_MULAW:
        return float_to_mulaw(samples)
    raise ValueError(
        f"Encoding {encoding!r} is not supported; use one of {sorted(SUPPORTED_ENCODINGS)}."
    )


def bytes_per_sample(encoding: str) -> int:
    """How many bytes one sample takes in ``encoding``, for cutting audio into chunks."""
    return {PCM_S16LE: 2, PCM_F32LE: 4, PCM_MULAW: 1}[encoding]


def rms_s16le(pcm: bytes) -> float:
    """Root-mean-square level of s16le PCM, on the 16-bit scale (0 to 32768)."""
    samples = s16le_to_float(pcm)
    if samples.size == 0:
        return 0.0
    return float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))) * 32768.0)


def spectral_flatness(pcm: bytes, sample_rate: int, frame_secs: float = 0.032) -> float:
    """How noise-like a voice is: the median spectral flatness of its voiced frames.

    Flatness is the geometric over the arithmetic mean of a frame's power
    spectrum: near 0 for a pure tone, 1 for white noise. It tells espeak-ng's
    formant voice (about 0.001: buzzy and clean) from Piper's neural Joe
    (about 0.004: breathier) on any sentence, where pitch (both near 100 Hz)
    does not. Frames quieter than -34 dBFS are left out.
    """
    samples = s16le_to_float(pcm)
    size = int(sample_rate * frame_secs)
    window = np.hanning(size)
    values = []
    for start in range(0, samples.size - size + 1, size):
        frame = samples[start : start + size]
        if np.sqrt(np.mean(frame**2)) < 0.02:
            continue
        power = np.abs(np.fft.rfft(frame * window)) ** 2 + 1e-12
        values.append(float(np.exp(np.mean(np.log(power))) / np.mean(power)))
    return float(np.median(values)) if values else 0.0
