"""Running ``teamrunner call`` on a short team as a user would, for the timeline and Whisker tests.

The team is two members on the simulators' voices and ears (Deepgram and
Cartesia stand-ins), so a call takes seconds, not the demo's Whisper time;
the front desk hands a billing question to billing, who looks the bill up
with a tool and says goodbye with its own line.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

TEAMRUNNER = Path(sys.executable).with_name("teamrunner")
HANDOFF_LINE = "Let me put you through to billing."


def member(member_id: str, **ai: object) -> dict:
    return {
        "id": member_id,
        "name": member_id.title(),
        "ai": {
            "engine_model": "openai.gpt-4o",
            "init_prompt": f"You are {member_id}.",
            "stt_type": "deepgram",
            "tts_type": "cartesia",
            "tts_voice_id": f"voice-{member_id}",
            **ai,
        },
    }


TEAM = {
    "name": "Short desk",
    "call": {"stt_type": "deepgram", "tts_type": "cartesia"},
    "team": {
        "start_member_id": "front",
        "members": [
            {
                **member("front", greeting="Hello, front desk here."),
                "transitions": [
                    {
                        "function_name": "transfer_to_billing",
                        "description": "The caller has a billing question.",
                        "next_member_id": "billing",
                        "handoff_message": HANDOFF_LINE,
                    }
                ],
            },
            {
                **member(
                    "billing",
                    end_call={
                        "description": "The caller has said goodbye.",
                        "goodbye": "Thank you for calling. Goodbye!",
                    },
                ),
                "tools": [
                    {
                        "name": "get_latest_bill",
                        "description": "Look up the caller's latest bill.",
                        "run_llm": True,
                        "parameters": {"type": "object", "properties": {}},
                    }
                ],
            },
        ],
    },
    # Lines with no pause in them: the Deepgram stand-in answers each stretch of speech
    # with the next scripted line, so a line the VAD heard in two would shift the rest.
    "caller": ["I have a billing question", "How much is my bill", "Thank you and goodbye"],
    "tool_results": {"get_latest_bill": {"result": {"invoice": "1042", "amount": "42 dollars"}}},
}


def environment(**extra: str) -> dict[str, str]:
    """The user's environment without provider keys or Whisker settings, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith("RUNNER_WHISKER")
    }
    return {**env, **extra}


class Command:
    """A command in a process of its own, its stdout read line by line."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.stderr = cwd / "stderr.txt"
        with self.stderr.open("w") as stderr:
            self.process = subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        self.lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def wait_for_line(self, text: str, timeout: float = 90) -> str:
        """The first line of stdout (from now on) that contains ``text``."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if text in line:
                return line
        pytest.fail(f"no line with {text!r} on stdout; got {self.lines}; {self.errors()}")

    def finish(self, timeout: float = 120) -> int:
        """Wait for the command to end; its exit status."""
        status = self.process.wait(timeout)
        while (line := self._lines.get(timeout=10)) is not None:
            self.lines.append(line)
        return status

    def errors(self) -> str:
        return f"stderr: {self.stderr.read_text()[-3000:]}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def team_file(directory: Path) -> Path:
    path = directory / "short.yaml"
    path.write_text(yaml.safe_dump(TEAM, sort_keys=False))
    return path
