"""Running a team file for real, on one machine: the runner between the simulators.

``run_team`` starts the pipecat-manager simulator, a simulator for each cloud
provider the team names, and a runner, all on 127.0.0.1; posts the /run
request pipecat-manager would post; and plays a caller (lines spoken by
Piper, or a WAV file) a turn at a time, waiting for the team to finish
answering before the next, or staying silent where the script says so (to
be nudged, when the team file asks for ``idle`` nudges). Local providers
(Whisper, Piper, espeak) run for real. The LLM leg is always a simulator
driven by the scripted ``KeywordBrain``, and the output says so. A team
file's ``remote_policy`` is used as it stands (a service the user runs), or,
with ``example_policy``, replaced by the repository's example service, started
for the call (``policy_service.py``).

While the call runs it prints the call's transcript (``transcript.py``); at
the end it writes the call as a stereo WAV (left: caller, right: what the
caller heard), the transcript as JSON, and the call's timeline as a
self-contained HTML page (``timeline/``: recorded by a pipecat observer on
the call, handed to the runner with pipecat's Whisker observer when
``whisker.py`` serves, both by ``watch.CallWatch``). A call can be cut short (Ctrl-C,
see ``interrupt.py``): the caller hangs up where the call is, and what was
recorded until then is written all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from playground.policy_service import ExamplePolicy, ExamplePolicyError
from playground.server import RunnerServer
from playground.teamfile import CallerSilence, TeamFile, run_request
from playground.transcript import CallReport, Transcript
from playground.watch import CallWatch
from simulators.brain import KeywordBrain, Persona
from simulators.cloud import Cloud
from simulators.manager import Caller, CallRecord, ManagerSimulator, ToolResult
from simulators.speech import speak
from simulators.wav import read_wav_16k_mono
from teamrunner.config import Settings
from teamrunner.contract import RemotePolicy
from teamrunner.plan import END_CALL_FUNCTION, function_name

if TYPE_CHECKING:
    from playground.whisker import Whisker

# The caller waits this long after the team falls silent before speaking again.
QUIET_SECS = 1.0
# Nothing from the team for this long after the caller spoke: give up on the turn.
TURN_TIMEOUT_SECS = 10.0


class PlaygroundError(Exception):
    """The team cannot be run against the simulators as asked."""


async def run_team(
    team: TeamFile,
    *,
    say: Sequence[str | CallerSilence] | None = None,
    caller_wav: Path | None = None,
    out_dir: Path | None = None,
    name: str = "call",
    echo: Callable[[str], None] = print,
    hangup: asyncio.Event | None = None,
    example_policy: bool = False,
    whisker: Whisker | None = None,
) -> CallReport:
    """Run ``team`` against the simulators with a scripted caller; see the module docstring.

    Setting ``hangup`` ends the call where it is (the caller hangs up); the report
    of what was recorded until then is still written and returned, marked
    ``interrupted``. With ``example_policy``, the call's remote policy is the
    example service, started for it. With ``whisker`` (serving), the call's
    frames are also sent to pipecat's Whisker debugger.

    Raises:
        PlaygroundError: the team needs something the simulators cannot stand in for.
    """
    check_simulable(team)
    if example_policy:
        try:
            async with ExamplePolicy(team.remote_policy) as service:
                echo(f"remote policy: {service.url} (the example in examples/, with a token)")
                return await _run(
                    team,
                    say,
                    caller_wav,
                    out_dir,
                    name,
                    echo,
                    hangup,
                    service.remote_policy,
                    whisker,
                )
        except ExamplePolicyError as e:
            raise PlaygroundError(str(e)) from e
    return await _run(team, say, caller_wav, out_dir, name, echo, hangup, None, whisker)


async def _run(
    team: TeamFile,
    say: Sequence[str | CallerSilence] | None,
    caller_wav: Path | None,
    out_dir: Path | None,
    name: str,
    echo: Callable[[str], None],
    hangup: asyncio.Event | None,
    policy: RemotePolicy | None,
    whisker: Whisker | None,
) -> CallReport:
    lines = say if say is not None else team.caller
    call_id = str(uuid.uuid4())
    watch = CallWatch(whisker)
    async with simulated_cloud(team) as cloud:
        cloud.deepgram.push_transcripts(*[line for line in lines if isinstance(line, str)])
        call = cloud.manager.expect_call(
            call_id,
            caller=Caller(Caller.silence(0.3)),
            tools={function_name(n): ToolResult.ok(t.result) for n, t in team.tool_results.items()},
        )
        transcript = Transcript(call, team, echo)
        conversation = _converse(team, cloud, call, transcript, lines, caller_wav, policy, watch)
        finished = await _unless_set(hangup or asyncio.Event(), conversation)
        report = CallReport(
            team=team.name or team.team.id,
            call_id=call_id,
            llm="scripted keyword brain (simulators/brain.py), not a model",
            startup_secs=transcript.startup_secs,
            interrupted=not finished,
            ended=transcript.ended,
            disposition=transcript.disposition,
            lines=transcript.lines,
            latencies=[round(x, 3) for x in transcript.latencies],
        )
        if out_dir is not None:
            await asyncio.to_thread(_write, report, call, out_dir, name, watch)
    return report


async def _converse(
    team: TeamFile,
    cloud: Cloud,
    call: CallRecord,
    transcript: Transcript,
    lines: Sequence[str | CallerSilence],
    caller_wav: Path | None,
    policy: RemotePolicy | None,
    watch: CallWatch,
) -> None:
    """The call itself: the runner up, /run posted, the caller's turns, the hangup."""
    echo = transcript.echo
    server = RunnerServer(_settings(cloud), observers=watch)
    async with server as runner, httpx.AsyncClient(timeout=60) as http:
        echo(
            f"team {team.name or team.team.id!r}: {len(team.team.members)} members; "
            "LLM: scripted keyword brain on the OpenAI simulator (not a model)"
        )
        started = time.monotonic()
        body = run_request(team, call.call_id, policy)
        response = await http.post(f"{runner.url}/run", json=body)
        if response.status_code != 200:
            raise PlaygroundError(f"the runner refused the call: {response.text}")
        transcript.call_up(time.monotonic() - started)
        session = runner.sessions.get(call.call_id)
        follower = asyncio.get_running_loop().create_task(transcript.follow())
        try:
            await _quiet(call)
            if caller_wav is not None:
                await _speak(cloud.manager, call, transcript, read_wav_16k_mono(caller_wav))
            for line in lines:
                if call.closed:
                    break  # the team ended the call
                if isinstance(line, CallerSilence):
                    await _stay_silent(call, transcript, line.silent_secs)
                else:
                    await _speak(cloud.manager, call, transcript, speak(line))
        finally:
            # Interrupted or not, the caller hangs up, as Go would end the call.
            if not call.closed:
                await cloud.manager.hangup(call.call_id)
            await asyncio.wait_for(follower, 10)
            if session is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(session.finished.wait(), 10)
                transcript.call_ended(session.journal.end_reason, session.journal.disposition)


async def _unless_set(event: asyncio.Event, work: Coroutine[Any, Any, None]) -> bool:
    """Run ``work`` to its end, or cancel it once ``event`` is set; whether it ended by itself.

    Raises:
        Whatever ``work`` raised.
    """
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        task.cancel()
        # Waits for the cancelled work to unwind; raises only if we are cancelled ourselves.
        await asyncio.wait({task})
    if task.cancelled():
        return False
    task.result()
    return True


def _write(
    report: CallReport, call: CallRecord, out_dir: Path, name: str, watch: CallWatch
) -> None:
    """Save the call as a stereo WAV, the report as JSON and the timeline as HTML.

    Each is named in the report (the timeline only if the call came up).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report.wav = str(out_dir / f"{name}.wav")
    report.transcript = str(out_dir / f"{name}.json")
    timeline = watch.write(out_dir / f"{name}.html", title=report.team)
    if timeline is not None:
        report.timeline = str(timeline)
    call.write_wav(report.wav)
    Path(report.transcript).write_text(json.dumps(report.to_json(), indent=2))


async def _speak(
    manager: ManagerSimulator, call: CallRecord, transcript: Transcript, pcm: bytes
) -> None:
    segments = len(call.caller_segments)
    await manager.say(call.call_id, Caller.pcm(pcm, label="caller"))
    # Once the filler silence that follows it has begun, the line has been sent whole.
    await call.wait(
        lambda c: len(c.caller_segments) > segments + 1,
        timeout=60,
        what="the caller to finish speaking",
    )
    ended = call.caller_segments[segments].ended_at
    transcript.caller_spoke(ended or time.monotonic())
    await _quiet(call, replied_after=ended)


async def _stay_silent(call: CallRecord, transcript: Transcript, secs: float) -> None:
    """The caller says nothing for ``secs`` (the line carries on with its silence)."""
    transcript.note(f"the caller stays silent for {secs:g} s")
    await asyncio.sleep(secs)
    await _quiet(call)


async def _quiet(call: CallRecord, replied_after: float | None = None) -> None:
    """Wait until the team has answered (if asked to) and been silent for ``QUIET_SECS``."""
    deadline = time.monotonic() + TURN_TIMEOUT_SECS
    while time.monotonic() < deadline:
        now = time.monotonic()
        last = max((e.at for e in call.events), default=now)
        playout_end = max(
            (start + len(pcm) / 32000 for start, pcm in call.heard_bot_audio()), default=0.0
        )
        answered = replied_after is None or any(c.at > replied_after for c in call.audio_chunks())
        idle_since = max(last, playout_end)
        if answered and now - idle_since >= QUIET_SECS:
            return
        await asyncio.sleep(max(0.05, QUIET_SECS - (now - idle_since)))


def check_simulable(team: TeamFile) -> None:
    """Raise ``PlaygroundError`` when a member needs a provider no simulator stands in for."""
    gemini = [m.name or m.id for m in team.team.members if m.ai.engine_model.startswith("gemini")]
    if gemini:
        raise PlaygroundError(
            f"members {', '.join(gemini)} use Gemini, which has no simulator here; "
            "give them an openai.<model> or grok.<model> engine to run the team locally"
        )


def simulated_cloud(team: TeamFile) -> Cloud:
    """The simulated cloud, its LLMs answering as the team's members by keyword (not started)."""
    start = team.team.start_member_id
    personas = [
        Persona(
            m.name or m.id,
            frozenset(function_name(t.name) for t in m.tools)
            | frozenset(function_name(t.function_name) for t in m.transitions)
            | (
                {END_CALL_FUNCTION}
                if m.ai.end_call or (m.id == start and team.call.end_call)
                else frozenset()
            ),
        )
        for m in team.team.members
    ]
    return Cloud(responder=KeywordBrain(personas), ms_per_char=40)


def _settings(cloud: Cloud) -> Settings:
    # The runner shares this process with the simulators and the caller, so the load it
    # would measure is theirs too: one call needs no admission.
    return replace(Settings.from_env(cloud.environment()), port=0, load_threshold=0.0)


def print_flush(text: str) -> None:
    print(text, flush=True, file=sys.stdout)
