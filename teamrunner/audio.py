"""Arithmetic on the call's 16-bit PCM audio, shared by turn-taking and playout."""

from __future__ import annotations

from pipecat.frames.frames import AudioRawFrame

NS_PER_SEC = 1_000_000_000


def audio_secs(frame: AudioRawFrame) -> float:
    """The length of a frame of 16-bit PCM, the caller's or the bot's."""
    return len(frame.audio) / (2 * frame.num_channels * frame.sample_rate)
