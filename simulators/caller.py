"""What the simulated caller plays on pipecat-manager's input socket, and at what pace.

Holds the script (``Caller``, made of ``Segment``s of 16 kHz mono s16le), the
options that say when the caller starts and what the line does after the
script (``Start``, ``Then``), the pacing of 20 ms frames (``Pacer``), and the
record of each segment as it went out (``SentSegment``). It holds no socket
and no protobuf: ``line.py`` puts these frames on the wire.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from simulators.wav import PHONE_RATE, SAMPLE_WIDTH, read_wav_16k_mono, resample_pcm16

FRAME_SECS = 0.02
"""Caller audio per input frame, as Go sends it."""

FRAME_BYTES = round(PHONE_RATE * FRAME_SECS) * SAMPLE_WIDTH
"""640: bytes of one 20 ms caller frame."""

_E = TypeVar("_E", bound=StrEnum)


class Start(StrEnum):
    """When the caller starts talking on the input socket."""

    AFTER_OUTPUT = "after_output"  # once the output socket is up too, like Go
    ON_CONNECT = "on_connect"  # the moment the input socket opens


class Then(StrEnum):
    """What the line does once the caller's script is played."""

    SILENCE = "silence"  # real-time silence until the call ends, like a phone line
    STOP = "stop"  # send nothing until more audio is queued with ``say``
    HANGUP = "hangup"  # close both sockets, like Go ending the call


class SegmentKind(StrEnum):
    AUDIO = "audio"
    SILENCE = "silence"
    FILLER = "filler"  # the line's silence after the script (``Then.SILENCE``)


@dataclass(frozen=True)
class Segment:
    """A piece of caller audio: 16 kHz mono s16le."""

    pcm: bytes = field(repr=False)
    kind: SegmentKind
    label: str

    @property
    def secs(self) -> float:
        return len(self.pcm) / (PHONE_RATE * SAMPLE_WIDTH)


class Caller:
    """A scripted caller: segments played in order, then ``then``.

    Example: ``Caller(Caller.silence(0.5), Caller.wav("hello.wav"), speed=0, realtime=False)``.

    Args:
        *segments: What to play, built with ``silence``, ``wav`` and ``pcm``.
        realtime: Pace frames at real time (20 ms per frame).
        speed: With ``realtime=False``, how many times faster than real time;
            0 sends as fast as the socket takes it. The filler silence after
            the script is always real time.
        start: ``Start.AFTER_OUTPUT`` (default) or ``Start.ON_CONNECT``.
        then: ``Then.SILENCE`` (default), ``Then.STOP`` or ``Then.HANGUP``.
    """

    def __init__(
        self,
        *segments: Segment,
        realtime: bool = True,
        speed: float = 1.0,
        start: Start | str = Start.AFTER_OUTPUT,
        then: Then | str = Then.SILENCE,
    ) -> None:
        if speed < 0:
            raise ValueError(f"Caller speed={speed}: must be >= 0 (0 = as fast as possible)")
        if realtime and speed != 1.0:
            raise ValueError(f"Caller speed={speed} needs realtime=False")
        self.segments = list(segments)
        self.realtime = realtime
        self.speed = speed
        self.start = _enum(Start, start, "start")
        self.then = _enum(Then, then, "then")

    @property
    def pace(self) -> float:
        """Speed factor of the script: 1.0 real time, 0.0 unpaced."""
        return 1.0 if self.realtime else self.speed

    @staticmethod
    def silence(secs: float) -> Segment:
        return Segment(
            bytes(round(secs * PHONE_RATE) * SAMPLE_WIDTH), SegmentKind.SILENCE, "silence"
        )

    @staticmethod
    def wav(path: str | Path) -> Segment:
        """Any PCM or float WAV, converted to 16 kHz mono."""
        return Segment(read_wav_16k_mono(path), SegmentKind.AUDIO, Path(path).name)

    @staticmethod
    def pcm(data: bytes, sample_rate: int = PHONE_RATE, label: str = "pcm") -> Segment:
        """Mono s16le audio, resampled to 16 kHz if needed."""
        return Segment(resample_pcm16(data, sample_rate, PHONE_RATE), SegmentKind.AUDIO, label)


def _enum(kind: type[_E], value: _E | str, name: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        accepted = ", ".join(repr(v.value) for v in kind)
        raise ValueError(f"Caller {name}={value!r}: accepted are {accepted}") from None


@dataclass
class SentSegment:
    """Caller audio as it went out.

    ``started_at`` and ``ended_at`` are the send times of its first and latest
    frame: the moment the runner can have the segment's first and last 20 ms.
    """

    label: str
    kind: SegmentKind
    started_at: float
    ended_at: float | None = None
    frames: int = 0
    audio: bytearray = field(default_factory=bytearray, repr=False)

    @property
    def pcm(self) -> bytes:
        return bytes(self.audio)

    def add_frame(self, pcm: bytes, sent_at: float) -> None:
        """Count one frame sent at ``sent_at``; the first one fixes ``started_at``."""
        if self.frames == 0:
            self.started_at = sent_at
        self.frames += 1
        self.audio += pcm
        self.ended_at = sent_at


class Pacer:
    """Sends frames on an absolute schedule, so pacing does not drift with the event loop."""

    def __init__(self) -> None:
        self._next: float | None = None

    async def wait(self, step: float) -> None:
        now = time.monotonic()
        # After a pause (``Then.STOP``) or a stall, restart the schedule instead of bursting.
        if self._next is None or now - self._next > 0.1:
            self._next = now
        delay = self._next - now
        await asyncio.sleep(max(delay, 0.0))
        self._next += step
