"""``teamrunner``: the demo, running any team file, and checking one.

teamrunner demo [--say LINE ...] [--out DIR]   # the embedded default: no keys, no network
teamrunner demo --policy [...]   # a receptionist driven by the example remote policy service
teamrunner call TEAM.yaml [--say LINE ...] [--caller WAV] [--out DIR]
teamrunner check TEAM.yaml       # findings and the member graph (Mermaid)
teamrunner talk TEAM.yaml [--port P] [--out DIR]    # talk to the team from the browser (WebRTC)
teamrunner eval TEAM.yaml SCENARIO.yaml... [--out DIR]  # pipecat eval's scenarios; exit 1: a fail
teamrunner eval-bot TEAM.yaml [--port P] [--out DIR]     # the team for `pipecat eval run --bot-url`

``demo`` and ``call`` write the call to DIR as a WAV, a JSON transcript and an
HTML timeline; ``eval``, ``eval-bot`` and ``talk`` write each call's HTML
timeline to DIR (``watch.py``). On all five, ``--whisker`` (or
``RUNNER_WHISKER=1``) also serves the calls to pipecat's Whisker debugger
(``whisker.py``).

(``python -m playground`` is the same command.) Ctrl-C during a call hangs
up and writes what was recorded, exiting with 130 (``talk`` ends its calls);
a second Ctrl-C quits at once (``interrupt.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from playground.interrupt import EXIT_STATUS, quit_now

if TYPE_CHECKING:
    from playground.teamfile import TeamFile
    from playground.whisker import Whisker

# The demo's teams ship inside the package, so an installed command finds them.
DEMO_TEAM = Path(__file__).resolve().parent / "teams" / "demo.yaml"
# The team of ``demo --policy``, whose conversation the example policy service drives.
POLICY_TEAM = Path(__file__).resolve().parent / "teams" / "receptionist.yaml"
# Where ``teamrunner talk`` serves by default: pipecat's own development runner's port.
TALK_PORT = 7860


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="teamrunner", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the demo team on the embedded default")
    demo.add_argument(
        "--policy",
        action="store_true",
        help="run the receptionist team, driven by the example remote policy service "
        "(examples/receptionist_policy.py, started for the call)",
    )
    call = commands.add_parser("call", help="run a team file against the simulators")
    call.add_argument("team", type=Path)
    call.add_argument("--caller", type=Path, help="a WAV the caller plays first")
    for command in (demo, call):
        command.add_argument(
            "--say", action="append", help="a caller line (repeatable; replaces the file's lines)"
        )
        command.add_argument(
            "--out", type=Path, default=Path("out"), help="where to write the call (out)"
        )
        _add_whisker(command)
    check = commands.add_parser("check", help="check a team file and draw its member graph")
    check.add_argument("team", type=Path)
    talk = commands.add_parser("talk", help="talk to a team from the browser, over WebRTC")
    talk.add_argument("team", type=Path)
    talk.add_argument(
        "--port", type=int, default=TALK_PORT, help=f"where to serve on 127.0.0.1 ({TALK_PORT})"
    )
    talk.add_argument(
        "--out",
        type=Path,
        default=Path("out/talk"),
        help="where to write each call's timeline (out/talk)",
    )
    _add_whisker(talk)
    _add_eval_commands(commands)
    args = parser.parse_args(argv)
    _quiet_logs()
    if args.command == "check":
        return _check(args.team)
    if args.command == "talk":
        try:
            status = asyncio.run(_talk(args.team, args.port, args.out, whisker=args.whisker))
        except KeyboardInterrupt:
            status = EXIT_STATUS
        if status == EXIT_STATUS:
            quit_now(status)
        return status
    if args.command in ("eval", "eval-bot"):
        return _eval(args)
    example_policy = args.command == "demo" and args.policy
    demo_team = POLICY_TEAM if example_policy else DEMO_TEAM
    team_path = args.team if args.command == "call" else demo_team
    try:
        status = asyncio.run(
            _call(
                team_path,
                args.out,
                args.say,
                getattr(args, "caller", None),
                example_policy,
                whisker=args.whisker,
            )
        )
    except KeyboardInterrupt:  # Ctrl-C before the call's own handling was in place
        status = EXIT_STATUS
    if status == EXIT_STATUS:
        quit_now(status)  # what was recorded is written: the user asked to leave
    return status


def _add_whisker(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--whisker",
        action="store_true",
        help="serve the calls to pipecat's Whisker debugger on ws://localhost:9090 "
        "(RUNNER_WHISKER_PORT), and record them to DIR/TEAM.whisk (also: RUNNER_WHISKER=1)",
    )


def _add_eval_commands(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "eval", help="run pipecat eval scenario files against a team (exit 1 if any fails)"
    )
    evaluate.add_argument("team", type=Path)
    evaluate.add_argument("scenarios", type=Path, nargs="+", help="scenario files or folders")
    evaluate.add_argument(
        "--out",
        type=Path,
        default=Path("out/eval"),
        help="where pipecat eval writes its logs, and each scenario's timeline (out/eval)",
    )
    evaluate.add_argument("-v", "--verbose", action="store_true", help="every expectation")
    bot = commands.add_parser("eval-bot", help="serve a team for `pipecat eval run --bot-url`")
    bot.add_argument("team", type=Path)
    bot.add_argument("--host", default="127.0.0.1")
    bot.add_argument("--port", type=int, default=7860, help="7860, pipecat eval's default")
    bot.add_argument(
        "--out",
        type=Path,
        default=Path("out/eval"),
        help="where to write each call's timeline (out/eval)",
    )
    for command in (evaluate, bot):
        _add_whisker(command)
        command.add_argument(
            "--simulated",
            action="store_true",
            help="the scripted stand-in LLM even when provider keys are set",
        )
        command.add_argument(
            "--example-policy",
            action="store_true",
            help="drive the team with the example remote policy service, started for it",
        )


def _eval(args: argparse.Namespace) -> int:
    from playground import whisker as debugger
    from playground.evals import run_scenarios, serve_bot
    from playground.team_call import PlaygroundError

    team = _load(args.team)
    if team is None:
        return 2

    async def evaluate() -> int:
        async with _whisker(args.whisker, args.out / f"{args.team.stem}.whisk") as whisker:
            options = {
                "simulated": args.simulated,
                "example_policy": args.example_policy,
                "whisker": whisker,
            }
            if args.command == "eval-bot":
                await serve_bot(team, host=args.host, port=args.port, out=args.out, **options)
                return 0
            return await run_scenarios(
                team, args.scenarios, out=args.out, verbose=args.verbose, **options
            )

    try:
        return asyncio.run(evaluate())
    except (PlaygroundError, debugger.WhiskerError) as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return EXIT_STATUS


@contextlib.asynccontextmanager
async def _whisker(flag: bool, recording: Path) -> AsyncIterator[Whisker | None]:
    """pipecat's Whisker, serving while the block runs, when asked for; else None.

    Raises:
        WhiskerError: it cannot be served as asked.
    """
    from playground import whisker as debugger
    from playground.team_call import print_flush

    if not debugger.wanted(flag):
        yield None
        return
    async with debugger.Whisker(recording, port=debugger.port_from_env()) as served:
        print_flush(f"Whisker: {served.url} (recording {recording})")
        yield served


def _quiet_logs() -> None:
    """The command's output is what it prints; the runner's own log only speaks up for errors."""
    from loguru import logger

    os.environ.setdefault("RUNNER_LOG_LEVEL", "ERROR")
    logger.remove()  # before pipecat is imported, which logs its banner
    from teamrunner.observe.logs import not_expected

    logger.add(sys.stderr, level=os.environ["RUNNER_LOG_LEVEL"], filter=not_expected)


def _load(path: Path) -> TeamFile | None:
    """The team file, or None once its problem is printed (exit status 2)."""
    from playground import teamfile

    try:
        return teamfile.load(path)
    except teamfile.TeamFileError as e:
        print(e, file=sys.stderr)
        return None


def _check(path: Path) -> int:
    from playground.checks import check
    from playground.graph import mermaid

    team = _load(path)
    if team is None:
        return 2
    findings = check(team)
    print(f"# {team.name or team.team.id}: {len(team.team.members)} members\n")
    print("```mermaid")
    print(mermaid(team))
    print("```\n")
    for error in findings.errors:
        print(f"error: {error}")
    for warning in findings.warnings:
        print(f"warning: {warning}")
    if findings.ok and not findings.warnings:
        print("no problems found")
    return 0 if findings.ok else 1


def _checked(path: Path) -> TeamFile | None:
    """The team file if it has no errors; else None, once they are printed."""
    from playground import checks

    team = _load(path)
    if team is None:
        return None
    findings = checks.check(team)
    if not findings.ok:
        print("the team file has errors; see: teamrunner check " + str(path))
        for error in findings.errors:
            print(f"error: {error}", file=sys.stderr)
        return None
    return team


async def _talk(path: Path, port: int, out: Path, *, whisker: bool) -> int:
    from playground import whisker as debugger
    from playground.interrupt import Interrupt
    from playground.talk import Talk, real_providers
    from playground.team_call import PlaygroundError, print_flush

    team = _checked(path)
    if team is None:
        return 1
    try:
        async with (
            _whisker(whisker, out / f"{path.stem}.whisk") as served,
            Talk(team, port=port, echo=print_flush, out=out, whisker=served) as talk,
        ):
            real = real_providers(os.environ)
            llm = (
                "the providers of the keys set"
                if real
                else "the scripted keyword brain (not a model)"
            )
            print_flush(
                f"team {team.name or team.team.id!r}: {len(team.team.members)} members; "
                f"real providers: {', '.join(real) or 'none'}; LLM: {llm}"
            )
            print_flush(f"open {talk.url} and press connect (Ctrl-C to stop)")
            notice = "interrupted: ending the calls (Ctrl-C again to quit at once)"
            with Interrupt(notice) as interrupt:
                await interrupt.hangup.wait()
    except (PlaygroundError, debugger.WhiskerError) as e:
        print(e, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"cannot serve on 127.0.0.1:{port}: {e.strerror}; try --port", file=sys.stderr)
        return 1
    return EXIT_STATUS


async def _call(
    path: Path,
    out: Path,
    say: list[str] | None,
    caller: Path | None,
    example_policy: bool,
    *,
    whisker: bool,
) -> int:
    from playground import checks
    from playground import whisker as debugger
    from playground.interrupt import Interrupt
    from playground.team_call import PlaygroundError, print_flush, run_team
    from playground.watch import timeline_written

    team = _load(path)
    if team is None:
        return 2
    findings = checks.check(team)
    if not findings.ok:
        print("the team file has errors; see: teamrunner check " + str(path))
        for error in findings.errors:
            print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        with Interrupt() as interrupt:
            async with _whisker(whisker, out / f"{path.stem}.whisk") as served:
                report = await run_team(
                    team,
                    say=say,
                    caller_wav=caller,
                    out_dir=out,
                    name=path.stem,
                    echo=print_flush,
                    hangup=interrupt.hangup,
                    example_policy=example_policy,
                    whisker=served,
                )
    except (PlaygroundError, debugger.WhiskerError) as e:
        print(e, file=sys.stderr)
        return 1
    print_flush(f"\nwrote {report.wav} (left: caller, right: what the caller heard)")
    print_flush(f"wrote {report.transcript}")
    if report.timeline is not None:
        print_flush(timeline_written(Path(report.timeline)))
    return EXIT_STATUS if report.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
