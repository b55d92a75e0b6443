"""The shared VAD's energy gate and inline analysis, against pipecat's own Silero VAD.

``SharedSileroVAD`` skips Silero (and the loudness meter) on windows that its
energy bound proves cannot be speech, and runs on the caller's task instead of
a thread of its own. These tests play the same audio to it and to pipecat's
``SileroVADAnalyzer`` as it ships, frame by frame as the user aggregator does,
and require the same VAD state after every frame: the caller is heard to start
and stop at the same window. Speech is Piper's Joe voice, scaled down for a
quiet caller, after silence or line noise long enough for the gate to close.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import onnxruntime
import pytest
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADState

from simulators.speech import speak
from teamrunner.speech.analyzers import SharedSileroVAD, silero_session
from teamrunner.speech.models import SpeechModels

RATE = 16000
FRAME = RATE // 25 * 2  # 40 ms of s16le, as the input transport joins the caller's audio

# pipecat's own analyzer finds its bundled model with a deprecated importlib call.
pytestmark = pytest.mark.filterwarnings("ignore:path is deprecated:DeprecationWarning")


def line(secs: float, rms: float, seed: int) -> bytes:
    """A line with nobody speaking: digital silence, or noise of ``rms`` sample units."""
    noise = np.random.default_rng(seed).normal(0.0, rms, int(secs * RATE))
    return noise.round().astype(np.int16).tobytes()


def quieter(pcm: bytes, gain: float) -> bytes:
    return (np.frombuffer(pcm, np.int16) * gain).round().astype(np.int16).tobytes()


def frames(pcm: bytes) -> Iterator[bytes]:
    for start in range(0, len(pcm) - FRAME + 1, FRAME):
        yield pcm[start : start + FRAME]


async def states(vad: VADAnalyzer, pcm: bytes) -> list[VADState]:
    vad.set_sample_rate(RATE)
    try:
        return [await vad.analyze_audio(frame) for frame in frames(pcm)]
    finally:
        await vad.cleanup()


@pytest.mark.parametrize(
    ("gain", "noise_rms"),
    [
        (1.0, 0.0),
        (0.03, 0.0),  # about -50 LUFS: as quiet as pipecat's min_volume still hears
        (0.03, 20.0),  # the same, over line noise at about -64 dBFS
    ],
)
async def test_gate_skips_the_silence_yet_hears_a_quiet_onset_at_pipecats_window(
    gain: float, noise_rms: float
) -> None:
    speech = quieter(speak("I would like to pay my phone bill."), gain)
    pcm = line(2.7, noise_rms, seed=1) + speech + line(1.0, noise_rms, seed=2)

    pipecats = await states(SileroVADAnalyzer(), pcm)
    gated = SpeechModels().vad()
    ours = await states(gated, pcm)

    assert VADState.SPEAKING in pipecats, "pipecat should hear the speech"
    assert ours.index(VADState.STARTING) == pipecats.index(VADState.STARTING)
    assert ours.index(VADState.SPEAKING) == pipecats.index(VADState.SPEAKING)
    assert ours == pipecats
    # Most of the audio is the line before and after the speech: the model skips it.
    assert gated.windows_skipped > gated.windows_scored


async def test_gate_lets_the_model_score_every_window_of_loud_line_noise() -> None:
    # Noise loud enough to pass min_volume must reach the model: only Silero tells it from speech.
    pcm = line(3.0, 600.0, seed=3)
    vad = SpeechModels().vad()

    assert await states(vad, pcm) == await states(SileroVADAnalyzer(), pcm)
    # All but the first windows, while the smoothed volume rises to min_volume.
    assert vad.windows_skipped < 20
    assert vad.windows_scored > 70


class ThreadRecordingVAD(SharedSileroVAD):
    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        super().__init__(session)
        self.threads: set[int] = set()

    def voice_confidence(self, buffer: bytes) -> float:
        self.threads.add(threading.get_ident())
        return super().voice_confidence(buffer)


async def test_shared_vad_analyzes_on_the_callers_thread() -> None:
    vad = ThreadRecordingVAD(silero_session())

    await states(vad, speak("Hello there."))

    assert vad.threads == {threading.get_ident()}
