"""``teamrunner eval`` and ``teamrunner eval-bot``: pipecat's own scenario files against a team.

``eval-bot`` serves the team on pipecat's eval websocket (``eval_bot.EvalBot``)
until Ctrl-C (or SIGTERM), for ``pipecat eval run --bot-url ws://...`` run by hand.
``eval`` serves it on a free port and runs pipecat's eval client against it,
as a process of its own (``python -m pipecat.evals run``, which is
``pipecat eval run``): what it prints is pipecat eval's report, its logs go
to ``--out`` (``<scenario>.eval.log``), and its exit status is the
command's: 0 when every scenario passed, 1 when any failed.

Both write each call's timeline to ``--out``: ``eval`` names it after its
scenario, as pipecat names the scenario's log (``demo__billing_handoff.html``
beside ``demo__billing_handoff.eval.log``), and prints where after the
report; ``eval-bot`` numbers its calls (``call-01.html``). Against a fixed bot
pipecat's client runs the scenarios one at a time, in the order of its
arguments and of each file, so the calls come in that order
(``scenario_stems``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipecat.evals.scenario import EvalScenarioFile, is_scenario_file

from playground.eval_bot import EvalBot
from playground.team_call import print_flush
from playground.teamfile import TeamFile
from playground.watch import timeline_written

if TYPE_CHECKING:
    from playground.whisker import Whisker

# The scenario files pipecat eval takes from a folder.
SCENARIO_SUFFIXES = (".yaml", ".yml")
# How long the calls may take to end once pipecat's client is done with them.
CALLS_END_SECS = 10.0


async def run_scenarios(
    team: TeamFile,
    scenarios: Sequence[Path],
    *,
    out: Path,
    verbose: bool = False,
    simulated: bool = False,
    example_policy: bool = False,
    whisker: Whisker | None = None,
) -> int:
    """Run pipecat eval's ``scenarios`` against ``team``; pipecat eval's exit status.

    Each scenario's call is drawn as a timeline in ``out``, and sent to ``whisker``
    when it serves.

    Raises:
        PlaygroundError: the team cannot run here as asked.
    """
    bot = EvalBot(
        team,
        simulated=simulated,
        example_policy=example_policy,
        echo=_quiet,
        out=out,
        names=scenario_stems(scenarios),
        whisker=whisker,
    )
    async with bot:
        print_flush(f"team {team.name or team.team.id!r} on {bot.url}; LLM: {bot.llm}")
        command = [sys.executable, "-m", "pipecat.evals", "run", *map(str, scenarios)]
        command += ["--bot-url", bot.url, "--logs-dir", str(out)]
        if verbose:
            command.append("--verbose")
        # pipecat eval's output is its report: its logs go to --out, and its banner nowhere.
        environ = {"LOGURU_LEVEL": "WARNING", **os.environ}
        harness = await asyncio.create_subprocess_exec(*command, env=environ)
        try:
            status = await harness.wait()
        finally:
            if harness.returncode is None:  # cancelled (Ctrl-C): the harness goes too
                harness.terminate()
                await harness.wait()
        await bot.calls_ended(CALLS_END_SECS)
    for path in bot.timelines:
        print_flush(timeline_written(path))
    return status


def scenario_stems(paths: Sequence[Path]) -> list[str]:
    """The names pipecat eval gives the logs of the scenarios in ``paths``, in its order.

    A folder is its scenario files, sorted, as pipecat eval takes them; a file that
    does not load has no scenario run (pipecat reports it), so no name here.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(
                p
                for p in path.iterdir()
                if p.suffix in SCENARIO_SUFFIXES and p.is_file() and is_scenario_file(p)
            )
        else:
            files.append(path)
    stems: list[str] = []
    for file in files:
        try:
            loaded = EvalScenarioFile.load(file)
        except (ValueError, OSError):
            continue
        stems += [scenario.name.replace("/", "__") for scenario in loaded]
    return stems


async def serve_bot(
    team: TeamFile,
    *,
    host: str,
    port: int,
    simulated: bool = False,
    example_policy: bool = False,
    out: Path | None = None,
    whisker: Whisker | None = None,
) -> None:
    """Serve ``team`` for ``pipecat eval run`` until SIGINT (Ctrl-C) or SIGTERM.

    Either signal ends the calls in progress and stops what the bot started
    (the example policy service among them) before it returns. Each call's
    timeline is written to ``out`` once it ends; its frames go to ``whisker``
    when it serves.

    Raises:
        PlaygroundError: the team cannot run here as asked, or the port is taken.
    """
    bot = EvalBot(
        team,
        host=host,
        port=port,
        simulated=simulated,
        example_policy=example_policy,
        echo=print_flush,
        out=out,
        whisker=whisker,
    )
    async with bot:
        print_flush(f"team {team.name or team.team.id!r}; LLM: {bot.llm}")
        print_flush(f"serving pipecat's eval transport on {bot.url} (Ctrl-C to stop); run:")
        print_flush(f"  pipecat eval run SCENARIO.yaml --bot-url {bot.url}")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signal_number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signal_number, stop.set)
        try:
            await stop.wait()
        finally:
            for signal_number in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signal_number)


def _quiet(line: str) -> None:
    """``eval`` leaves the telling to pipecat's report."""
