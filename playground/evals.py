"""``teamrunner eval`` and ``teamrunner eval-bot``: pipecat's own scenario files against a team.

``eval-bot`` serves the team on pipecat's eval websocket (``eval_bot.EvalBot``)
until Ctrl-C (or SIGTERM), for ``pipecat eval run --bot-url ws://...`` run by hand.
``eval`` serves it on a free port and runs pipecat's eval client against it,
as a process of its own (``python -m pipecat.evals run``, which is
``pipecat eval run``): what it prints is pipecat eval's report, its logs go
to ``--out`` (``<scenario>.eval.log``), and its exit status is the
command's: 0 when every scenario passed, 1 when any failed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from playground.eval_bot import EvalBot
from playground.team_call import print_flush
from playground.teamfile import TeamFile


async def run_scenarios(
    team: TeamFile,
    scenarios: Sequence[Path],
    *,
    out: Path,
    verbose: bool = False,
    simulated: bool = False,
    example_policy: bool = False,
) -> int:
    """Run pipecat eval's ``scenarios`` against ``team``; pipecat eval's exit status.

    Raises:
        PlaygroundError: the team cannot run here as asked.
    """
    bot = EvalBot(team, simulated=simulated, example_policy=example_policy, echo=_quiet)
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
            return await harness.wait()
        finally:
            if harness.returncode is None:  # cancelled (Ctrl-C): the harness goes too
                harness.terminate()
                await harness.wait()


async def serve_bot(
    team: TeamFile,
    *,
    host: str,
    port: int,
    simulated: bool = False,
    example_policy: bool = False,
) -> None:
    """Serve ``team`` for ``pipecat eval run`` until SIGINT (Ctrl-C) or SIGTERM.

    Either signal ends the calls in progress and stops what the bot started
    (the example policy service among them) before it returns.

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
