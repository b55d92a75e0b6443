"""WAV files and raw PCM for the simulators: read any WAV as 16 kHz mono, write calls.

Phone audio on pipecat-manager's wire is 16-bit little-endian PCM ("s16le"),
16 kHz, mono. This module turns WAV files of any common layout into that,
writes PCM back out, and lays a whole call (caller as sent, bot as heard) into
one stereo file on a common clock. The conversion between s16le bytes and
float samples is ``audio.py``'s; this module knows nothing about sockets or frames.
"""

from __future__ import annotations

import struct
import wave
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import soxr

from simulators.audio import float_to_s16le, s16le_to_float

PHONE_RATE = 16000
"""Sample rate of caller audio on pipecat-manager's input socket."""

SAMPLE_WIDTH = 2
"""Bytes per sample of s16le PCM."""

_PCM = 1
_IEEE_FLOAT = 3
_EXTENSIBLE = 0xFFFE


class WavFormatError(ValueError):
    """A file is not a WAV this module can read; the message says which part."""


def read_wav_16k_mono(path: str | Path) -> bytes:
    """Read any PCM or float WAV and return it as 16 kHz mono s16le.

    Channels are averaged and other rates resampled with soxr. A file that is
    already 16-bit mono at 16 kHz comes back byte for byte.

    Raises:
        WavFormatError: when the file is not a RIFF/WAVE file with PCM (8, 16,
            24 or 32-bit) or IEEE float (32 or 64-bit) samples.
    """
    data, audio_format, rate, channels, bits = _read_wav_chunks(Path(path))
    if audio_format == _PCM and bits == 16 and channels == 1 and rate == PHONE_RATE:
        return data[: len(data) - len(data) % 2]
    samples = _decode_samples(data, audio_format, bits, channels, path)
    return resample_to_pcm16(samples.mean(axis=1), rate, PHONE_RATE)


def resample_to_pcm16(samples: np.ndarray, in_rate: int, out_rate: int) -> bytes:
    """Resample mono float samples in [-1, 1] and return s16le bytes at ``out_rate``."""
    samples = np.asarray(samples, dtype=np.float64)
    if in_rate != out_rate and samples.size:
        samples = soxr.resample(samples, in_rate, out_rate, quality="HQ")
    return float_to_s16le(samples)


def resample_pcm16(pcm: bytes, in_rate: int, out_rate: int) -> bytes:
    """Resample mono s16le PCM; returns the input unchanged when the rates match."""
    if in_rate == out_rate:
        return pcm
    return resample_to_pcm16(s16le_to_float(pcm), in_rate, out_rate)


def write_wav(path: str | Path, pcm: bytes, sample_rate: int, channels: int = 1) -> None:
    """Write interleaved s16le PCM as a WAV file."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(SAMPLE_WIDTH)
        out.setframerate(sample_rate)
        out.writeframes(pcm)


def write_call_wav(
    path: str | Path,
    caller_segments: Iterable[tuple[float, bytes]],
    bot_segments: Iterable[tuple[float, bytes]],
    sample_rate: int = PHONE_RATE,
    *,
    bot_sample_rate: int | None = None,
    origin: float | None = None,
) -> float:
    """Write a call as a stereo WAV: left is the caller, right the bot.

    Each segment is ``(start_at, pcm)``: a ``time.monotonic()`` start and mono
    s16le audio. Both channels share one clock whose zero is ``origin`` (by
    default the earliest segment start), so the gap between the caller's last
    word and the bot's first is what the file plays. Overlapping segments in a
    channel are mixed.

    Args:
        path: File to write.
        caller_segments: Caller audio at ``sample_rate``.
        bot_segments: Bot audio at ``bot_sample_rate`` (default ``sample_rate``);
            resampled to ``sample_rate`` when it differs.
        sample_rate: Rate of the file and of the caller audio.
        bot_sample_rate: Rate of the bot audio, when not ``sample_rate``.
        origin: Monotonic time of the file's first sample.

    Returns:
        The ``origin`` used, so other timestamps can be placed on the file.
    """
    bot_rate = bot_sample_rate or sample_rate
    caller = [(at, s16le_to_float(pcm)) for at, pcm in caller_segments]
    bot = [
        (at, s16le_to_float(resample_pcm16(pcm, bot_rate, sample_rate))) for at, pcm in bot_segments
    ]
    starts = [at for at, _ in caller + bot]
    if origin is None:
        origin = min(starts) if starts else 0.0
    length = max(
        (_offset(at, origin, sample_rate) + len(x) for at, x in caller + bot),
        default=0,
    )
    mix = np.zeros((length, 2), dtype=np.float64)
    for channel, segments in ((0, caller), (1, bot)):
        for at, samples in segments:
            start = _offset(at, origin, sample_rate)
            mix[start : start + len(samples), channel] += samples
    write_wav(path, float_to_s16le(mix.reshape(-1)), sample_rate, channels=2)
    return origin


def _offset(at: float, origin: float, sample_rate: int) -> int:
    return max(0, round((at - origin) * sample_rate))


def _read_wav_chunks(path: Path) -> tuple[bytes, int, int, int, int]:
    """Return ``(data, audio_format, sample_rate, channels, bits)`` from a RIFF/WAVE file."""
    raw = path.read_bytes()
    if len(raw) < 12 or raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        raise WavFormatError(f"{path}: not a RIFF/WAVE file")
    fmt: tuple[int, int, int, int] | None = None
    data: bytes | None = None
    pos = 12
    while pos + 8 <= len(raw):
        chunk_id, size = raw[pos : pos + 4], struct.unpack_from("<I", raw, pos + 4)[0]
        body = raw[pos + 8 : pos + 8 + size]
        if chunk_id == b"fmt ":
            if len(body) < 16:
                raise WavFormatError(f"{path}: 'fmt ' chunk is {len(body)} bytes, expected >= 16")
            audio_format, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", body)
            if audio_format == _EXTENSIBLE and len(body) >= 26:
                audio_format = struct.unpack_from("<H", body, 24)[0]
            fmt = (audio_format, rate, channels, bits)
        elif chunk_id == b"data":
            data = body
        pos += 8 + size + (size & 1)
    if fmt is None or data is None:
        raise WavFormatError(f"{path}: missing {'fmt ' if fmt is None else 'data'} chunk")
    audio_format, rate, channels, bits = fmt
    if channels < 1 or rate < 1:
        raise WavFormatError(f"{path}: {channels} channels at {rate} Hz")
    return data, audio_format, rate, channels, bits


def _decode_samples(
    data: bytes, audio_format: int, bits: int, channels: int, path: str | Path
) -> np.ndarray:
    """Decode interleaved samples to float64, shape ``(frames, channels)``."""
    width = bits // 8
    usable = len(data) - len(data) % (width * channels) if width else 0
    data = data[:usable]
    if audio_format == _PCM and bits == 8:
        samples = (np.frombuffer(data, dtype=np.uint8).astype(np.float64) - 128.0) / 128.0
    elif audio_format == _PCM and bits == 16:
        samples = s16le_to_float(data)
    elif audio_format == _PCM and bits == 24:
        triples = np.frombuffer(data, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        values = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
        values = np.where(values & 0x800000, values - (1 << 24), values)
        samples = values.astype(np.float64) / float(1 << 23)
    elif audio_format == _PCM and bits == 32:
        samples = np.frombuffer(data, dtype="<i4").astype(np.float64) / float(1 << 31)
    elif audio_format == _IEEE_FLOAT and bits in (32, 64):
        samples = np.frombuffer(data, dtype="<f4" if bits == 32 else "<f8").astype(np.float64)
    else:
        raise WavFormatError(
            f"{path}: unsupported sample format {audio_format} with {bits} bits; "
            "accepted are PCM (format 1) with 8, 16, 24 or 32 bits and float (format 3) "
            "with 32 or 64 bits"
        )
    return samples.reshape(-1, channels)
