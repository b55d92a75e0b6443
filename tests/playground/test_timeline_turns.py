"""Cutting a call's moments into turns: who speaks up, what the caller heard, and the measures.

The moments are what ``CallTimeline`` notes on a real call (its own test,
``tests/playground/test_timeline.py``, runs one); here they are written out
by hand, like a scripted timeline, on the short call's plan, to pin down the cases a short call does
not reach: the team speaking up after a silence, and a caller cutting a
reply off.
"""

from __future__ import annotations

from pathlib import Path

from playground import teamfile
from playground.timeline.recorder import Moment
from playground.timeline.turns import HEARD, cut
from simulators.cloud import KEYS
from teamrunner.config import Settings
from teamrunner.contract import RunRequest
from teamrunner.plan import CallPlan, plan_call

from short_call import team_file


def short_plan(tmp_path: Path) -> CallPlan:
    team = teamfile.load(team_file(tmp_path))
    request = RunRequest.model_validate(teamfile.run_request(team, "c1", None))
    return plan_call(request, Settings.from_env(KEYS))


def caller_turn(start: float, stop: float, text: str) -> list[Moment]:
    return [
        Moment(start, "caller-start", "billing"),
        Moment(stop, "caller-stop", "billing", data={"vad": stop + 0.3}),
        Moment(stop + 0.2, "transcript", "billing", text),
        Moment(stop + 0.8, "turn-end", "billing"),
        Moment(stop + 0.8, "llm-request", "billing"),
    ]


def reply(at: float, secs: float, text: str) -> list[Moment]:
    return [
        Moment(at, "tts-start", "billing", text, data={"handoff": False}),
        Moment(at + 0.02, "tts-first-audio", "billing"),
        Moment(at + 0.02, "heard", "billing", data={"end": at + 0.02 + secs}),
        Moment(at + 0.1, "tts-stop", "billing"),
    ]


def test_a_line_said_after_a_silence_opens_a_turn_of_the_teams_own(tmp_path: Path) -> None:
    moments = [
        *caller_turn(1.0, 2.0, "How much is my bill?"),
        *reply(3.0, 2.0, "It is 42 dollars."),
        # Six seconds after the caller heard the answer: the idle nudge.
        Moment(11.0, "line", "billing", "Are you still there?"),
        *reply(11.05, 1.0, "Are you still there?"),
    ]

    turns = cut(moments, short_plan(tmp_path))

    assert [(t.opener, t.said) for t in turns[1:]] == [
        ("caller", "How much is my bill?"),
        ("team", "Are you still there?"),
    ]
    # The caller waited from their last word to the first audio they heard.
    v2v = turns[1].measure("voice-to-voice")
    assert v2v is not None and v2v.ms == 1020
    assert turns[2].measure("voice-to-voice") is None


def test_the_voice_to_voice_time_is_cut_into_the_stages_the_caller_waited_for(
    tmp_path: Path,
) -> None:
    moments = [
        *caller_turn(1.0, 2.0, "How much is my bill?"),  # VAD 2.3, transcript 2.2, turn end 2.8
        Moment(2.9, "llm-first-byte", "billing", "It"),
        *reply(3.0, 2.0, "It is 42 dollars."),  # first audio and heard at 3.02
    ]

    turn = cut(moments, short_plan(tmp_path))[1]

    # The transcript came before the VAD was sure: its wait is the end of turn's.
    assert turn.breakdown == [
        ("VAD stop wait", 300),
        ("end of turn", 500),
        ("LLM", 100),
        ("TTS", 120),
        ("playout", 0),
    ]
    measure = turn.measure("voice-to-voice")
    assert measure is not None and sum(ms for _, ms in turn.breakdown) == measure.ms


def test_a_reply_cut_off_ends_where_the_caller_stopped_hearing_it(tmp_path: Path) -> None:
    moments = [
        *caller_turn(1.0, 2.0, "How much is my bill?"),
        *reply(3.0, 4.0, "It is 42 dollars, due on the fifteenth of December."),
    ]
    moments[-2].data["end"] = 4.5  # as the recorder leaves it when the caller barges in
    moments.append(Moment(4.5, "barge-in", "billing"))

    turn = cut(moments, short_plan(tmp_path))[1]

    heard = [b for b in turn.bars if b.lane == HEARD]
    assert [(b.start, b.end) for b in heard] == [(3.02, 4.5)]
    assert heard[0].label == "Billing: It is 42 dollars, due on the fifteenth of December."
    assert [t.label for t in turn.ticks if t.lane == HEARD] == ["cut off"]


def test_in_a_text_session_each_message_of_the_caller_is_a_turn(tmp_path: Path) -> None:
    moments = [
        Moment(0.1, "line", "front", "Hello, front desk here."),
        Moment(1.0, "transcript", "front", "I have a billing question"),
        Moment(1.0, "llm-request", "front"),
        Moment(1.2, "llm-end", "front"),
        Moment(3.0, "transcript", "billing", "How much is my bill"),
        Moment(3.0, "llm-request", "billing"),
        Moment(3.1, "llm-first-byte", "billing", "It"),
        Moment(3.3, "llm-end", "billing", "It is 42 dollars."),
    ]

    turns = cut(moments, short_plan(tmp_path))

    assert [(t.opener, t.said) for t in turns] == [
        ("opening", "Hello, front desk here."),
        ("caller", "I have a billing question"),
        ("caller", "How much is my bill"),
    ]
    llm = [b for b in turns[2].bars if b.lane == "LLM · Billing"]
    assert [(b.label, b.start, b.end) for b in llm] == [("It is 42 dollars.", 3.0, 3.3)]
