"""``teamrunner``: the demo, running any team file, and checking one.

teamrunner demo                  # the embedded default, no keys, no network
teamrunner call TEAM.yaml [--say LINE ...] [--caller WAV] [--out DIR]
teamrunner check TEAM.yaml       # findings and the member graph (Mermaid)

(``python -m playground`` is the same command.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playground.teamfile import TeamFile

# The demo's team ships inside the package, so an installed command finds it.
DEMO_TEAM = Path(__file__).resolve().parent / "teams" / "demo.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="teamrunner", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the demo team on the embedded default")
    demo.add_argument("--out", type=Path, default=Path("out"), help="where to write the call")
    call = commands.add_parser("call", help="run a team file against the simulators")
    call.add_argument("team", type=Path)
    call.add_argument("--say", action="append", help="a caller line (repeatable)")
    call.add_argument("--caller", type=Path, help="a WAV the caller plays first")
    call.add_argument("--out", type=Path, default=Path("out"))
    check = commands.add_parser("check", help="check a team file and draw its member graph")
    check.add_argument("team", type=Path)
    args = parser.parse_args(argv)
    # The transcript is the output; the runner's own log only speaks up for errors.
    os.environ.setdefault("RUNNER_LOG_LEVEL", "ERROR")
    if args.command == "check":
        return _check(args.team)
    team_path = DEMO_TEAM if args.command == "demo" else args.team
    return asyncio.run(
        _call(team_path, args.out, getattr(args, "say", None), getattr(args, "caller", None))
    )


def _load(path: Path) -> TeamFile | None:
    """The team file, or None once its problem is printed (exit status 2)."""
    from playground import teamfile

    try:
        return teamfile.load(path)
    except teamfile.TeamFileError as e:
        print(e, file=sys.stderr)
        return None


def _check(path: Path) -> int:
    from playground import teamfile

    team = _load(path)
    if team is None:
        return 2
    findings = teamfile.check(team)
    print(f"# {team.name or team.team.id}: {len(team.team.members)} members\n")
    print("```mermaid")
    print(teamfile.mermaid(team))
    print("```\n")
    for error in findings.errors:
        print(f"error: {error}")
    for warning in findings.warnings:
        print(f"warning: {warning}")
    if findings.ok and not findings.warnings:
        print("no problems found")
    return 0 if findings.ok else 1


async def _call(path: Path, out: Path, say: list[str] | None, caller: Path | None) -> int:
    from loguru import logger

    from playground import teamfile
    from playground.team_call import PlaygroundError, print_flush, run_team
    from teamrunner.logs import not_expected

    logger.remove()
    logger.add(sys.stderr, level=os.environ["RUNNER_LOG_LEVEL"], filter=not_expected)
    team = _load(path)
    if team is None:
        return 2
    findings = teamfile.check(team)
    if not findings.ok:
        print("the team file has errors; see: teamrunner check " + str(path))
        for error in findings.errors:
            print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        report = await run_team(
            team, say=say, caller_wav=caller, out_dir=out, name=path.stem, echo=print_flush
        )
    except PlaygroundError as e:
        print(e, file=sys.stderr)
        return 1
    print_flush(f"\nwrote {report.wav} (left: caller, right: what the caller heard)")
    print_flush(f"wrote {report.transcript}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
