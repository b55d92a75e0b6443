"""The embedded default's speech providers on real audio, inside real calls.

Whisper (``stt_type: whisper``) must hear the words a Piper-voiced caller
says; Piper and espeak (``tts_type: piper`` / ``espeak``) must put speech, not
silence or a tone, on the output socket at 16 kHz mono. Silero VAD judges
what is speech.
"""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from pipecat.audio.vad.silero import SileroVADAnalyzer

from playground.server import RunnerServer
from simulators.manager import Caller, ManagerSimulator
from simulators.openai import OpenAISimulator, Reply
from simulators.speech import speak
from teamrunner.config import Settings

from conftest import OPENAI_KEY

CALL_ID = "local-speech-call"
# Where Whisper tiny.en hears the first part of Piper's "How much is my bill?" as
# "How much is mine?"; pipecat's VAD ends speech after 1 s with no audio at all.
STALL_CUT_SECS = 0.66
STALL_SECS = 1.3


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def speech_share(pcm: bytes, rate: int = 16000) -> float:
    """The share of 32 ms windows Silero VAD is confident hold speech (pipecat's own VAD,
    scoring every window: the runner's skips windows too quiet to count as speech)."""
    vad = SileroVADAnalyzer()
    vad.set_sample_rate(rate)
    window = vad.num_frames_required() * 2
    scores = [
        float(vad.voice_confidence(pcm[i : i + window]).item())
        for i in range(0, len(pcm) - window + 1, window)
    ]
    return sum(score > 0.5 for score in scores) / max(len(scores), 1)


async def run_call(body: dict, caller: Caller, replies: list[Reply]):
    async with ManagerSimulator() as manager, OpenAISimulator(replies) as llm:
        call = manager.expect_call(CALL_ID, caller=caller)
        settings = Settings(
            port=0, pipecatcall_address=manager.address, endpoints={"OPENAI_BASE_URL": llm.base_url}
        )
        async with RunnerServer(settings) as runner, httpx.AsyncClient(timeout=30) as http:
            request = {"id": CALL_ID, "llm_type": "openai.sim", "llm_key": OPENAI_KEY, **body}
            response = await http.post(f"{runner.url}/run", json=request)
            assert response.status_code == 200, response.text
            yield call, llm, manager


async def test_whisper_hears_the_words_of_a_piper_voiced_caller() -> None:
    caller = Caller(Caller.silence(0.3), Caller.pcm(speak("I would like to pay my phone bill.")))
    async for call, _, _ in run_call({"stt_type": "whisper"}, caller, [Reply.say("Sure.")]):
        await call.wait(lambda c: c.user_transcripts(), timeout=20, what="Whisper's transcript")

        assert words(call.user_transcripts()[0]) == words("I would like to pay my phone bill.")


@pytest.mark.parametrize(("tts_type", "voice"), [("piper", None), ("espeak", "en-gb")])
async def test_local_voice_puts_speech_at_16khz_on_the_output_socket(tts_type, voice) -> None:
    body = {
        "llm_messages": [{"role": "system", "content": "Greet the caller."}],
        "tts_type": tts_type,
        "tts_voice_id": voice,
    }
    reply = Reply.say("Hello, thank you for calling. How can I help you today?")
    async for call, _, _ in run_call(body, Caller(), [reply]):
        await call.wait_rtvi("bot-llm-stopped", timeout=15)
        await call.wait_bot_audio(min_secs=2.0, timeout=15)

        assert {(c.sample_rate, c.num_channels) for c in call.audio_chunks()} == {(16000, 1)}
        assert speech_share(call.received_bot_audio()) > 0.4


async def test_a_sentence_whose_audio_stalls_midway_reaches_the_llm_whole() -> None:
    """The caller's audio stops coming mid-sentence for longer than pipecat's VAD waits.

    The VAD then ends the stretch of speech where the audio stopped, and
    Whisper on "How much is my" cut there hears "How much is mine?"; once the
    rest comes, inside the turn's grace, the turn must be recognised whole.
    """
    sentence = speak("How much is my bill?")
    cut = round(STALL_CUT_SECS * 16000) * 2
    caller = Caller(Caller.silence(0.3), Caller.pcm(sentence[:cut]), then="stop")
    async for call, llm, manager in run_call(
        {"stt_type": "whisper"}, caller, [Reply.say("Ten dollars.")]
    ):
        await call.wait(lambda c: c.script_done_at, timeout=10, what="the first half")
        await asyncio.sleep(STALL_SECS)
        await manager.say(CALL_ID, Caller.pcm(sentence[cut:]), Caller.silence(1.0))
        (request,) = await llm.wait_for_requests(1, timeout=20)

        assert words(request.user_text or "") == words("How much is my bill?")
