"""Simulated voices are tones a test can recognise again, even after pipecat resamples them."""

from __future__ import annotations

import numpy as np
import pytest
from pipecat.audio.utils import create_file_resampler, ulaw_to_pcm

from simulators.audio import float_to_mulaw, rms_s16le
from simulators.voices import (
    TONE_LADDER_HZ,
    VoiceBook,
    dominant_hz,
    identify_voice,
    ladder_tone,
    synthesize,
    tone_hz,
    word_timings,
)

TEAM = ["voice-greeter", "voice-billing", "voice-support"]


def test_each_voice_id_always_gets_the_same_ladder_tone():
    assert tone_hz("voice-greeter") == tone_hz("voice-greeter") == ladder_tone("voice-greeter")
    assert all(tone_hz(voice) in TONE_LADDER_HZ for voice in TEAM)
    assert min(TONE_LADDER_HZ) >= 300 and max(TONE_LADDER_HZ) <= 2000


@pytest.mark.parametrize(
    "voices",
    [TEAM, ["greeter", "billing", "support"], ["voice-a", "voice-b"], ["v1", "v2"]],
)
def test_voice_ids_that_tests_use_together_get_different_tones(voices):
    assert len({tone_hz(voice) for voice in voices}) == len(voices)


def test_audio_lasts_ms_per_char_for_every_character_of_the_text():
    text = "Hello there, caller."
    pcm = synthesize(text, "voice-greeter", 24000, ms_per_char=40)
    assert len(pcm) == len(text) * 0.040 * 24000 * 2


def test_words_sound_where_word_timings_put_them_and_spaces_are_silent():
    text = "one two"
    rate = 16000
    pcm = synthesize(text, "voice-billing", rate, ms_per_char=50)
    first, second = word_timings(text, rate, 50)

    def span(start: float, end: float) -> bytes:
        return pcm[int(start * rate) * 2 : int(end * rate) * 2]

    assert (first.word, first.start, first.end) == ("one", 0.0, 0.15)
    assert (second.word, second.start, second.end) == ("two", 0.2, 0.35)
    assert rms_s16le(span(first.start, first.end)) > 3000
    assert rms_s16le(span(first.end, second.start)) == 0.0


def test_dominant_frequency_is_the_voice_tone():
    pcm = synthesize("A few words of speech.", "voice-support", 24000)
    assert dominant_hz(pcm, 24000) == pytest.approx(tone_hz("voice-support"), rel=0.01)


async def test_voice_is_identified_after_pipecat_resamples_it_to_16khz():
    pcm = synthesize("Thanks for calling, how can I help?", "voice-greeter", 24000)
    resampled = await create_file_resampler().resample(pcm, 24000, 16000)
    assert identify_voice(resampled, 16000, TEAM) == "voice-greeter"


async def test_mulaw_voice_decodes_back_to_the_same_voice():
    book = VoiceBook()
    mulaw = book.synthesize("Your bill is ready.", "voice-billing", 8000, encoding="pcm_mulaw")
    pcm = await ulaw_to_pcm(mulaw, 8000, 8000, create_file_resampler())
    assert book.identify_voice(pcm, 8000, TEAM) == "voice-billing"


def test_silence_and_unknown_tones_are_attributed_to_no_voice():
    silence = bytes(16000 * 2)
    assert identify_voice(silence, 16000, TEAM) is None
    t = np.arange(16000) / 16000
    off_ladder = (0.3 * np.sin(2 * np.pi * 3300 * t) * 32767).astype("<i2").tobytes()
    assert identify_voice(off_ladder, 16000, TEAM) is None


def test_pinned_tone_overrides_the_ladder():
    book = VoiceBook({"voice-greeter": 440.0})
    book.register_voice("voice-billing", 880.0)
    pcm = book.synthesize("Pinned.", "voice-billing", 16000)
    assert book.tone_hz("voice-greeter") == 440.0
    assert dominant_hz(pcm, 16000) == pytest.approx(880.0, rel=0.01)
    assert book.identify_voice(pcm, 16000, ["voice-greeter", "voice-billing"]) == "voice-billing"


def test_candidates_that_sound_alike_are_refused_rather_than_guessed():
    book = VoiceBook({"a": 500.0, "b": 505.0})
    with pytest.raises(ValueError, match="register_voice"):
        book.identify_voice(book.synthesize("hi", "a", 16000), 16000, ["a", "b"])


def test_register_voice_rejects_a_non_positive_tone():
    with pytest.raises(ValueError, match="positive"):
        VoiceBook().register_voice("voice-x", 0)


def test_mulaw_encoder_matches_g711_reference_points():
    # G.711 mu-law: silence is 0xFF, full-scale positive 0x80, full-scale negative 0x00.
    assert float_to_mulaw(np.array([0.0, 1.0, -1.0])) == bytes([0xFF, 0x80, 0x00])
