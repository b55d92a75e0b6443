"""Ctrl-C on ``teamrunner call``: the call ends at once, and what was recorded is written.

Each test runs the installed command as a user would, in a process of its
own, waits for the call to be under way (a line of its transcript on
stdout), and sends it SIGINT, as a terminal does for Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import wave
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from short_call import TEAMRUNNER, Command, environment

# The exit status a shell reports for a command ended by Ctrl-C (128 + SIGINT).
INTERRUPTED = 130


def member(member_id: str, target: str) -> dict:
    return {
        "id": member_id,
        "name": member_id.title(),
        "ai": {
            "engine_model": "openai.gpt-4o",
            "init_prompt": f"You are {member_id}.",
            "stt_type": "deepgram",
            "tts_type": "cartesia",
            "tts_voice_id": f"voice-{member_id}",
        },
        "transitions": [{"function_name": f"transfer_to_{target}", "next_member_id": target}],
    }


# A call that would go on for half a minute: the caller has a lot to say.
TEAM = {
    "name": "Long call",
    "call": {"stt_type": "deepgram", "tts_type": "cartesia"},
    "team": {
        "start_member_id": "front",
        "members": [member("front", "sales"), member("sales", "front")],
    },
    "caller": [
        "I would like to talk to sales, please.",
        "Tell me about every product you have.",
        "And what does each of them cost?",
        "Thank you, goodbye.",
    ],
}


class CallCommand(Command):
    """``teamrunner call`` on ``TEAM`` in a process of its own, its stdout read line by line."""

    def __init__(self, tmp_path: Path) -> None:
        team = tmp_path / "long.yaml"
        team.write_text(yaml.safe_dump(TEAM, sort_keys=False))
        self.out = tmp_path / "out"
        argv = [str(TEAMRUNNER), "call", str(team), "--out", str(self.out)]
        super().__init__(argv, tmp_path, environment())

    def interrupt(self) -> float:
        """Send SIGINT (Ctrl-C); returns when it was sent."""
        self.process.send_signal(signal.SIGINT)
        return time.monotonic()


@pytest.fixture
def command(tmp_path: Path) -> Iterator[CallCommand]:
    running = CallCommand(tmp_path)
    yield running
    running.kill()


def test_ctrl_c_ends_a_call_within_a_second_and_writes_what_was_recorded(
    command: CallCommand,
) -> None:
    command.wait_for_line("call up in")
    # The greeting has been heard and the caller has spoken: the team is answering.
    command.wait_for_line('caller         : "')

    sent = command.interrupt()
    status = command.process.wait(timeout=10)
    took = time.monotonic() - sent

    assert status == INTERRUPTED, command.errors()
    assert took < 1.0, f"exited {took:.2f} s after Ctrl-C"
    assert "interrupted: hanging up" in command.errors()
    with wave.open(str(command.out / "long.wav")) as wav:
        assert wav.getnchannels() == 2
        recorded_secs = wav.getnframes() / wav.getframerate()
        pcm = memoryview(wav.readframes(wav.getnframes())).cast("h")
    assert 3.0 < recorded_secs < 30.0
    assert max(abs(v) for v in pcm[1::2]) > 1000  # the bot's greeting, as heard
    report = json.loads((command.out / "long.json").read_text())
    assert report["interrupted"] is True
    kinds = [line["kind"] for line in report["lines"]]
    assert kinds[:3] == ["note", "bot", "caller"]  # call up, the greeting, the first line
    assert kinds.count("caller") == 1  # nothing after the interruption
    # The run said where it wrote them, too.
    wrote = [command.wait_for_line("wrote "), command.wait_for_line("wrote ")]
    assert wrote[0].endswith("long.wav (left: caller, right: what the caller heard)")
    assert wrote[1].endswith("long.json")


def test_a_second_ctrl_c_quits_at_once_while_the_first_is_still_writing(
    command: CallCommand,
) -> None:
    # A named pipe nobody reads: writing the recording blocks for as long as we like.
    command.out.mkdir()
    os.mkfifo(command.out / "long.wav")
    command.wait_for_line("call up in")
    command.interrupt()
    with pytest.raises(subprocess.TimeoutExpired):
        command.process.wait(timeout=1.5)  # still writing what it recorded

    sent = command.interrupt()
    status = command.process.wait(timeout=10)
    took = time.monotonic() - sent

    assert status == INTERRUPTED, command.errors()
    assert took < 0.5, f"exited {took:.2f} s after the second Ctrl-C"
    assert "interrupted again: quitting without writing" in command.errors()
