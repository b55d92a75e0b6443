"""The embedded default's voice-to-voice: from the caller's last word to the bot's first audio.

Runs the demo's team (``playground/teams/demo.yaml``: Whisper tiny.en ears,
Piper and espeak-ng voices, Silero VAD) on this machine, with a caller who
says ``--turns`` lines, once per turn-taking setting, and reads each reply's
wait off the call's own transcript (what pipecat-manager's side saw, as the
demo prints it). The first setting is the baseline: the fixed end-of-turn
rule the demo has (VAD stop 0.3 s plus 0.6 s); the others are the levers.
The transcript (one caller line per turn) is checked too: a faster turn that
splits or mishears the caller does not pay.

    python -m bench.demo_latency [--turns 10]
"""

from __future__ import annotations

import argparse
import asyncio
import re

from bench.harness import banner, percentile, table
from playground.cli import DEMO_TEAM
from playground.team_call import run_team
from playground.teamfile import TeamFile, load
from teamrunner.contract import VADConfig

LINES = [
    "Hi, I have a billing question.",
    "How much is my bill?",
    "When is it due?",
    "Can I pay it by card?",
    "What is the amount again?",
    "Is there a late fee?",
    "Can you send me a copy?",
    "Thanks for checking that.",
    "One more question about the bill.",
    "Thank you, goodbye.",
]

SETTINGS: list[tuple[str, bool, float]] = [
    ("fixed rule, VAD stop 0.3 s (the demo)", False, 0.3),
    ("fixed rule, VAD stop 0.2 s", False, 0.2),
    ("smart-turn, VAD stop 0.2 s", True, 0.2),
]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def with_turns(team: TeamFile, smart_turn: bool, stop_secs: float) -> TeamFile:
    call = team.call.model_copy(
        update={"smart_turn_enabled": smart_turn, "vad_config": VADConfig(stop_secs=stop_secs)}
    )
    return team.model_copy(update={"call": call})


async def main(turns: int) -> None:
    banner("Demo voice-to-voice")
    team = load(DEMO_TEAM)
    lines = (LINES * (turns // len(LINES) + 1))[:turns]
    rows = []
    baseline = None
    for label, smart_turn, stop_secs in SETTINGS:
        report = await run_team(
            with_turns(team, smart_turn, stop_secs), say=lines, echo=lambda _: None
        )
        heard = [line.text for line in report.lines if line.kind == "caller"]
        right = sum(words(h) == words(s) for h, s in zip(heard, lines, strict=False))
        waits = [s * 1000 for s in report.latencies]
        p50 = percentile(waits, 50)
        baseline = baseline or p50
        rows.append(
            (label, len(waits), p50, percentile(waits, 95), p50 / baseline, f"{right}/{len(lines)}")
        )
    print(table(["turn-taking", "turns", "p50 ms", "p95 ms", "p50 / before", "heard right"], rows))
    print(
        "\nThe wait is read at pipecat-manager's side: caller's end of speech to first bot audio."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    asyncio.run(main(parser.parse_args().turns))
