"""A transition's handoff line is said in the current member's voice while the next member starts.

The greeter hands a billing question to billing with ``handoff_message``.
Its voice (Cartesia, voice-greeter) gets the line before billing's voice
(ElevenLabs, voice-billing) gets billing's first words; billing's LLM is
asked while the line is still playing; the caller hears the line whole and
then billing, never the two interleaved, even when the greeter's voice is
slow to finish, however long the line takes to make; and Go reads the line
as the bot's words.

A member that transfers with words of its own instead ("Sure, one moment.",
no ``handoff_message``) gets the same: billing is asked while those words
are still being made, and its first request reads them.
"""

from __future__ import annotations

import httpx

from playground.server import RunnerServer
from simulators.manager import AudioChunk, Caller, CallRecord
from simulators.openai import Reply
from simulators.tts import PROVIDER_PACING

from conftest import Cloud, cloud_settings
from scenarios import TEAM_CALL_ID, caller_says, team_request

HANDOFF = "One moment, I am putting you through to our billing team."


def handoff_team(line: str = HANDOFF) -> dict:
    body = team_request()
    to_billing = body["resolved_team"]["members"][0]["transitions"][0]
    to_billing.update(handoff_message=line)
    return body


def voice_of(cloud: Cloud, chunk: AudioChunk) -> str | None:
    return cloud.voices.identify_voice(chunk.pcm, 16000, ["voice-greeter", "voice-billing"])


def voice_of_each_chunk(cloud: Cloud, call: CallRecord) -> list[str | None]:
    return [voice_of(cloud, c) for c in call.audio_chunks()]


def secs_in(cloud: Cloud, call: CallRecord, voice: str) -> float:
    """Seconds of bot audio received in ``voice`` (after the greeter's first reply)."""
    return sum(c.secs for c in call.audio_chunks()[1:] if voice_of(cloud, c) == voice)


def runs(voices: list[str | None]) -> list[str]:
    out: list[str] = []
    for voice in voices:
        if voice is not None and (not out or out[-1] != voice):
            out.append(voice)
    return out


def playout_end(call: CallRecord, cloud: Cloud, voice: str) -> float:
    """When the media server finished playing the last chunk it heard in ``voice``."""
    ends = [
        start + len(pcm) / 32000
        for start, pcm in call.heard_bot_audio()
        if cloud.voices.identify_voice(pcm, 16000, [voice]) == voice
    ]
    return max(ends)


async def answered_call(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, body: dict
) -> CallRecord:
    """Start the team ``body``; returns once the greeter has said its first words."""
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    return call


def assert_one_voice_then_the_other(cloud: Cloud, call: CallRecord) -> None:
    """The greeter's voice, then billing's, never the two interleaved."""
    voices = [v for v in voice_of_each_chunk(cloud, call) if v is not None]
    first_billing = voices.index("voice-billing")
    assert voices[:first_billing] == ["voice-greeter"] * first_billing
    assert set(voices[first_billing:]) == {"voice-billing"}


async def test_the_handoff_line_is_said_in_the_current_voice_while_the_next_llm_answers(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Welcome to Acme."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here, how can I help?"))
    call = await answered_call(cloud, runner, http, handoff_team())

    await caller_says(cloud, "I have a billing question.")

    await call.wait(
        lambda c: "Billing here, how can I help?" in c.bot_llm_text(), 15, "billing's answer"
    )
    await call.wait(lambda c: runs(voice_of_each_chunk(cloud, c))[-1:] == ["voice-billing"], 10)
    [line] = [r for r in cloud.cartesia.requests if r.transcript == HANDOFF]
    [answer] = [r for r in cloud.elevenlabs.requests if r.transcript]
    assert line.voice_id == "voice-greeter"
    assert line.received_at < answer.received_at
    # Billing's LLM was asked while the caller was still hearing the line.
    [billing_first] = cloud.grok.requests
    assert billing_first.received_at < playout_end(call, cloud, "voice-greeter")
    # The caller heard the greeter (welcome, then the line), then billing.
    assert runs(voice_of_each_chunk(cloud, call)) == ["voice-greeter", "voice-billing"]
    # Go read the line as the bot's words, between the two members' replies.
    assert call.bot_llm_text() == [
        "Welcome to Acme.",
        HANDOFF,
        "Billing here, how can I help?",
    ]
    # No model wrote it, and it is not put in billing's context as if billing had said it.
    assert all(HANDOFF not in str(m.get("content")) for m in billing_first.messages)
    assert all(HANDOFF not in (r.reply.text or "") for r in cloud.openai.requests if r.reply)


async def test_the_next_voice_waits_until_the_previous_one_has_said_the_line(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # The greeter's voice streams its audio slowly; billing answers at once.
    cloud.cartesia.chunk_delay = 0.08
    cloud.openai.push(Reply.say("Hi."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here, how can I help?"))
    call = await answered_call(cloud, runner, http, handoff_team())

    await caller_says(cloud, "Billing, please.")

    # Wait for all of both: the line (0.57 s of tone) and billing's answer (0.29 s).
    await call.wait(lambda c: secs_in(cloud, c, "voice-greeter") >= 0.55, 15, "the line")
    await call.wait(lambda c: secs_in(cloud, c, "voice-billing") >= 0.25, 15, "billing")
    assert_one_voice_then_the_other(cloud, call)
    # And billing's LLM was still asked while the greeter's voice was making the line.
    [billing_first] = cloud.grok.requests
    line_chunks = [c for c in call.audio_chunks()[1:] if voice_of(cloud, c) == "voice-greeter"]
    assert billing_first.received_at < line_chunks[-1].at


async def test_the_next_voice_waits_for_a_line_that_takes_longer_than_the_voice_timeout(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # 8.8 s of audio (10 ms a character), which the greeter's voice makes at a
    # real provider's pace (1.5 times real time): 5.9 s, past
    # RUNNER_TTS_TIMEOUT_SECS (5 s). The voice never stalls, so billing's voice
    # waits for all of it.
    line = "Please hold the line while I put you through to billing, " * 15 + "thank you."
    line_secs = len(line) * 0.010
    assert line_secs / PROVIDER_PACING.speed > runner.settings.tts_timeout_secs
    cloud.cartesia.pacing = PROVIDER_PACING
    cloud.openai.push(Reply.say("Hi."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here, how can I help?"))
    call = await answered_call(cloud, runner, http, handoff_team(line))

    await caller_says(cloud, "Billing, please.")

    await call.wait(lambda c: secs_in(cloud, c, "voice-billing") >= 0.25, 60, "billing")
    voices = voice_of_each_chunk(cloud, call)
    first_billing = voices.index("voice-billing")
    # The line's tone fills all of it but the pauses between its clauses.
    line_heard = secs_in(cloud, call, "voice-greeter")
    assert line_heard > 0.9 * line_secs
    assert set(voices[first_billing:]) - {None} == {"voice-billing"}


async def test_the_next_voice_speaks_once_the_previous_one_makes_no_audio_for_the_voice_timeout(
    cloud: Cloud, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hi."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here, how can I help?"))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    # A stall guard shorter than pipecat's own (a voice's audio context ends
    # after 3 s without audio), so it is the router's that lets billing speak.
    stall_secs = 0.5
    async with RunnerServer(cloud_settings(cloud, tts_timeout_secs=stall_secs)) as runner:
        assert (await http.post(f"{runner.url}/run", json=handoff_team())).status_code == 200
        await call.wait_rtvi("bot-llm-stopped", timeout=10)
        # The greeter's voice takes the line and never makes a sound of it.
        cloud.cartesia.stalled = True
        try:
            await caller_says(cloud, "Billing, please.")

            await call.wait(lambda c: secs_in(cloud, c, "voice-billing") >= 0.25, 15, "billing")
        finally:
            cloud.cartesia.stalled = False
        [line] = [r for r in cloud.cartesia.requests if r.transcript == HANDOFF]
        first_billing = next(
            c for c in call.audio_chunks() if voice_of(cloud, c) == "voice-billing"
        )
        assert secs_in(cloud, call, "voice-greeter") == 0
        assert first_billing.at - line.received_at < 2.5


async def test_in_a_call_without_a_voice_the_handoff_line_is_the_bots_text(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = handoff_team()
    body.update(tts_type=None, tts_voice_id=None)
    cloud.openai.push(Reply.say("Welcome."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."))
    call = await answered_call(cloud, runner, http, body)

    await caller_says(cloud, "Billing, please.")

    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 15, "billing's answer")
    assert call.bot_llm_text() == ["Welcome.", HANDOFF, "Billing here."]
    assert HANDOFF in call.bot_transcripts()
    assert call.audio_chunks() == []


async def test_a_caller_who_talks_over_the_line_gets_the_next_member_at_once(
    cloud: Cloud, http: httpx.AsyncClient
) -> None:
    # The greeter's voice takes seconds to make a long line; the voice router
    # would wait for it (up to RUNNER_TTS_TIMEOUT_SECS, here 60 s) but for the
    # barge-in, which cuts the line off and lets billing's voice speak.
    cloud.cartesia.chunk_delay = 0.3
    body = handoff_team(line="Please hold on. " * 12)
    cloud.openai.push(Reply.say("Hi."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."), Reply.say("Sure, go ahead."))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    async with RunnerServer(cloud_settings(cloud, tts_timeout_secs=60.0)) as runner:
        assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
        await call.wait_rtvi("bot-llm-stopped", timeout=10)
        await caller_says(cloud, "Billing, please.")
        await call.wait_member_switches(1, timeout=15)

        await caller_says(cloud, "Wait, one more thing.")

        await call.wait(lambda c: bool(c.flushes()), 10, "the barge-in")
        await cloud.elevenlabs.wait_until(
            lambda: "Sure, go ahead." in cloud.elevenlabs.texts_for_voice("voice-billing"), 15
        )
        await call.wait(lambda c: secs_in(cloud, c, "voice-billing") >= 0.1, 10, "billing")
        # The line was cut off: the caller heard only part of it, then billing.
        flushed_at = call.flushes()[-1].at
        heard_line = [
            start
            for start, pcm in call.heard_bot_audio()
            if start > flushed_at
            and cloud.voices.identify_voice(pcm, 16000, ["voice-greeter"]) == "voice-greeter"
        ]
        assert heard_line == []


OWN_WORDS = "Sure, one moment, I will put you through to billing."


async def test_a_member_that_transfers_with_its_own_words_has_the_next_asked_while_they_are_made(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # The greeter's voice streams its audio slowly; billing answers at once.
    cloud.cartesia.chunk_delay = 0.08
    cloud.openai.push(Reply.say("Hi."), Reply.say(OWN_WORDS).and_call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here, how can I help?"), Reply.say("You are welcome."))
    call = await answered_call(cloud, runner, http, team_request())

    await caller_says(cloud, "Billing, please.")

    # Wait for all of both: the greeter's words (0.53 s of tone) and billing's answer.
    await call.wait(lambda c: secs_in(cloud, c, "voice-greeter") >= 0.5, 15, "the words")
    await call.wait(lambda c: secs_in(cloud, c, "voice-billing") >= 0.25, 15, "billing")
    # Billing's LLM was asked while the greeter's voice was still making the words...
    billing_first = cloud.grok.requests[0]
    words = [c for c in call.audio_chunks()[1:] if voice_of(cloud, c) == "voice-greeter"]
    assert billing_first.received_at < words[len(words) // 2].at
    # ...and read them, where the greeter said them: before its call to transfer.
    said, transfer, result = billing_first.messages[-3:]
    assert said == {"role": "assistant", "content": OWN_WORDS}
    assert [c["function"]["name"] for c in transfer["tool_calls"]] == ["transfer_to_billing"]
    assert result["tool_call_id"] == transfer["tool_calls"][0]["id"]
    # The caller heard the greeter's words whole, then billing, never the two interleaved.
    assert_one_voice_then_the_other(cloud, call)

    await caller_says(cloud, "Thanks.")

    await call.wait(lambda c: "You are welcome." in c.bot_llm_text(), 15, "billing's next answer")
    # The conversation holds the greeter's words once, as the caller heard them.
    later = cloud.grok.requests[1]
    assert [m.get("content") for m in later.messages].count(OWN_WORDS) == 1
    assert call.bot_llm_text() == [
        "Hi.",
        OWN_WORDS,
        "Billing here, how can I help?",
        "You are welcome.",
    ]
