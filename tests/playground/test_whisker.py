"""pipecat's Whisker debugger on the playground's calls: served when asked for, absent otherwise.

With ``RUNNER_WHISKER=1`` ``teamrunner call`` serves Whisker's websocket while
the call runs: the test connects as the Whisker UI does, and reads the
snapshot naming the call's pipeline and the call's frames. Without it,
nothing listens there, the command never imports the package, and neither
does the runner itself (``main``, ``run``). ``eval --whisker`` sends every
scenario's call there (read back from its recording), and ``talk --whisker``
serves it while it serves the team.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import msgpack
import pytest
import websockets

from short_call import TEAMRUNNER, Command, environment, team_file

ROOT = Path(__file__).resolve().parents[2]
TEAMS = ROOT / "playground" / "teams"
LINE = "I have a billing question"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def whisker_events(url: str, wanted: int) -> list[dict]:
    """Connect as the Whisker UI does and read events until ``wanted`` frames of the call."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    events: list[dict] = []
    async with websockets.connect(url, max_size=None) as ws:
        while sum(e["type"] == "frame" for e in events) < wanted:
            # A message is a batch of events, each packed on its own.
            unpacker.feed(await asyncio.wait_for(ws.recv(), timeout=60))
            events += list(unpacker)
    return events


@pytest.mark.timeout(240)
async def test_runner_whisker_serves_the_calls_frames_to_the_whisker_ui(tmp_path: Path) -> None:
    port = free_port()
    command = Command(
        [str(TEAMRUNNER), "call", str(team_file(tmp_path)), "--say", LINE, "--out", "out"],
        tmp_path,
        environment(RUNNER_WHISKER="1", RUNNER_WHISKER_PORT=str(port)),
    )
    try:
        served = await asyncio.to_thread(command.wait_for_line, "Whisker: ")
        assert f"ws://localhost:{port}" in served
        await asyncio.to_thread(command.wait_for_line, "call up in")
        events = await whisker_events(f"ws://localhost:{port}", wanted=5)
        status = await asyncio.to_thread(command.finish, 200)
    finally:
        command.kill()
    assert status == 0, f"{command.lines} {command.errors()}"
    snapshot = events[0]
    assert snapshot["type"] == "snapshot"
    workers = [w["worker_id"] for w in snapshot["workers"]]
    assert len(workers) == 1 and workers[0].startswith("call-")
    processors = {p["type"] for p in snapshot["workers"][0]["topology"]["processors"]}
    assert {"Lines", "LLMUserAggregator"} <= processors
    frames = [e for e in events if e["type"] == "frame"]
    assert {f["worker_id"] for f in frames} == {workers[0]}
    # And the session is recorded beside the transcript, for the Whisker UI to load later.
    assert (tmp_path / "out" / "short.whisk").stat().st_size > 0


@pytest.mark.timeout(240)
def test_without_runner_whisker_nothing_of_whisker_is_imported_or_served(tmp_path: Path) -> None:
    port = free_port()
    team = team_file(tmp_path)
    # The command as the console script runs it, telling afterwards what it imported.
    script = textwrap.dedent(
        f"""
        import sys
        from playground.cli import main
        status = main(["call", {str(team)!r}, "--say", {LINE!r}, "--out", "out"])
        print("imported whisker:", any(m.startswith("pipecat_whisker") for m in sys.modules))
        sys.exit(status)
        """
    )
    command = Command(
        [sys.executable, "-c", script], tmp_path, environment(RUNNER_WHISKER_PORT=str(port))
    )
    try:
        command.wait_for_line("call up in")
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("localhost", port)):
            pass
        status = command.finish(200)
    finally:
        command.kill()
    assert status == 0, f"{command.lines} {command.errors()}"
    assert "imported whisker: False" in command.lines
    assert not any("Whisker" in line for line in command.lines)
    assert not (tmp_path / "out" / "short.whisk").exists()


def test_the_runner_itself_never_imports_whisker() -> None:
    script = (
        "import sys, main, run; main.create_app(); "
        "print(any(m.startswith('pipecat_whisker') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.timeout(240)
def test_eval_with_whisker_sends_every_scenarios_call_to_whisker(tmp_path: Path) -> None:
    port = free_port()
    scenarios = ROOT / "playground" / "scenarios" / "demo.yaml"
    result = subprocess.run(
        [str(TEAMRUNNER), "eval", str(TEAMS / "demo.yaml"), str(scenarios), "--whisker"],
        cwd=tmp_path,
        env=environment(RUNNER_WHISKER_PORT=str(port)),
        capture_output=True,
        text=True,
        timeout=200,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    recording = Path("out/eval/demo.whisk")
    assert f"Whisker: ws://localhost:{port} (recording {recording})" in result.stdout
    with (tmp_path / recording).open("rb") as whisk:
        events = list(msgpack.Unpacker(whisk, raw=False, strict_map_key=False))
    # The frames of two calls, one per scenario of the file.
    workers = {e["worker_id"] for e in events if e["type"] == "frame"}
    assert len(workers) == 2 and all(w.startswith("call-") for w in workers)


@pytest.mark.timeout(240)
def test_talk_with_whisker_serves_whisker_while_it_serves_the_team(tmp_path: Path) -> None:
    port = free_port()
    command = Command(
        [str(TEAMRUNNER), "talk", str(TEAMS / "demo.yaml"), "--port", "0", "--whisker"],
        tmp_path,
        environment(RUNNER_WHISKER_PORT=str(port)),
    )
    try:
        served = command.wait_for_line("Whisker: ")
        command.wait_for_line("open http://")
        with socket.create_connection(("localhost", port)):
            pass  # the Whisker UI's websocket is there
        command.process.send_signal(signal.SIGINT)
        status = command.finish(60)
    finally:
        command.kill()
    assert served == f"Whisker: ws://localhost:{port} (recording out/talk/demo.whisk)"
    assert status == 128 + signal.SIGINT
