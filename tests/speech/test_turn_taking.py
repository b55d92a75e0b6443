"""vad_config and smart_turn_enabled change when the caller's turn ends.

The caller says "I was wondering if you could", pauses 1.2 seconds, then says
"help me with my bill." (The smart-turn model scores the first half below
0.02, however much of its start or trailing silence it is given: clearly
unfinished.)
Whether the pause ends the turn (two LLM runs, the first on half a
sentence) or not (one run on the whole sentence) depends on the turn
settings, which the Go side's previous runner silently ignored.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from playground.server import RunnerServer
from simulators.manager import Caller
from simulators.openai import Reply
from simulators.speech import speak

from conftest import Cloud
from scenarios import CALL_ID, voice_request


async def first_user_turn(
    cloud: Cloud,
    runner: RunnerServer,
    http: httpx.AsyncClient,
    *,
    pause: float = 1.2,
    speed: float = 1.0,
    **turn: Any,
) -> str:
    """What the LLM was first asked after the caller spoke, under ``turn`` settings.

    ``speed`` below 1 delivers the caller's audio slower than real time, as a
    busy machine does when the audio waits in the pipeline's queues.
    """
    cloud.openai.push(Reply.say("Hi."), Reply.say("Okay."), Reply.say("Okay."))
    cloud.deepgram.push_transcripts("I was wondering if you could", "help me with my bill.")
    call = cloud.manager.expect_call(
        CALL_ID,
        caller=Caller(
            Caller.silence(0.5),
            Caller.pcm(speak("I was wondering if you could")),
            Caller.silence(pause),
            Caller.pcm(speak("help me with my bill.")),
            realtime=speed == 1.0,
            speed=speed,
        ),
    )
    body = voice_request(tts_type=None, tts_voice_id=None, tools=[], **turn)
    response = await http.post(f"{runner.url}/run", json=body)
    assert response.status_code == 200, response.text
    await call.wait_caller_done(timeout=30)
    await call.wait(
        lambda c: (
            "help me with my bill." in " ".join(r.user_text or "" for r in cloud.openai.requests)
        ),
        timeout=10,
        what="the end of the sentence to reach the LLM",
    )
    return cloud.openai.requests[1].user_text or ""


async def test_short_vad_stop_splits_a_pause_into_two_turns(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    first = await first_user_turn(cloud, runner, http, vad_config={"stop_secs": 0.2})

    assert first == "I was wondering if you could"


async def test_long_vad_stop_keeps_the_sentence_in_one_turn(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    first = await first_user_turn(cloud, runner, http, vad_config={"stop_secs": 1.6})

    assert first == "I was wondering if you could help me with my bill."


@pytest.mark.parametrize(
    ("smart_turn", "expected"),
    [
        (False, "I was wondering if you could"),
        (True, "I was wondering if you could help me with my bill."),
    ],
)
async def test_smart_turn_waits_out_a_pause_in_an_unfinished_sentence(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, smart_turn: bool, expected: str
) -> None:
    first = await first_user_turn(cloud, runner, http, smart_turn_enabled=smart_turn)

    assert first == expected


async def test_a_short_pause_in_audio_that_arrives_late_stays_in_one_turn(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # 0.4 s of pause: the VAD stops 0.3 s into it and hears speech again well
    # inside the 0.6 s grace, counted in audio. On the wall clock, with the audio
    # arriving at 0.4 times real time, the grace would run out first.
    first = await first_user_turn(cloud, runner, http, pause=0.4, speed=0.4)

    assert first == "I was wondering if you could help me with my bill."


async def test_a_caller_who_resumes_inside_the_grace_is_not_cut_off_while_the_vad_confirms(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # About 0.7 s of quiet between the words (Piper's own silences included): the
    # VAD stops 0.2 s into it, the caller speaks again about 0.5 s later, inside
    # the 0.6 s grace, but the VAD reports speech only once it has lasted its
    # start_secs (0.2 s), after the grace.
    first = await first_user_turn(cloud, runner, http, pause=0.5, vad_config={"stop_secs": 0.2})

    assert first == "I was wondering if you could help me with my bill."
