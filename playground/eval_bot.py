"""A team served on pipecat's eval websocket: one real call per connection of ``pipecat eval run``.

``EvalBot`` listens at ``ws://HOST:PORT/ws``, where pipecat's eval harness
connects once per scenario. Each connection is a call as production runs
it: the team file becomes the ``/run`` body pipecat-manager would send
(``teamfile.run_request``), planned by ``plan_call`` and started by the
runner's own ``SessionRegistry`` with ``run.build_call``; only the
transport is the harness's websocket (``eval_transport.EvalSocket``) in
place of pipecat-manager's two.

A text scenario (the harness asks the bot to skip its speech) is a chat
session, the way pipecat-manager starts one: no ``stt_type`` or
``tts_type`` at the top of the request, so no member hears or speaks and
every reply, greeting and handoff line reaches the harness as text. An
audio scenario keeps the team's ears and voices. The harness says only
whether it will listen to the bot's speech (``judge.modality``), not how it
will speak (``user.modality``), so a scenario whose caller speaks must
listen too: a spoken caller with a text judge would talk to a chat session.

Everything else the call talks to is on this machine:

* pipecat-manager's ``/tools`` and ``/member-switched`` are the
  pipecat-manager simulator, its tools answering from the team file's
  ``tool_results`` (as ``teamrunner call`` does);
* the LLMs are the scripted stand-in (``team_call.simulated_cloud``), unless
  the environment holds a provider key (``OPENAI_API_KEY``, ...): then the
  team's own providers and models run, as in production, with only
  pipecat-manager simulated. ``simulated=True`` keeps the stand-in whatever
  the environment holds.

Each call is watched (``watch.CallWatch``): given an ``out`` folder, its
timeline is written there once it ends, named by the next of ``names``
(``eval`` passes its scenarios' names, in the order the harness runs them)
or else by its number (``call-01.html``); and its frames go to pipecat's
Whisker when a ``whisker`` serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import uvicorn
from fastapi import FastAPI, WebSocket
from pipecat.evals.serializer import EvalConnectionFlags
from pydantic import ValidationError

from playground.eval_transport import EvalSocket, NotAnEval, read_eval_connect
from playground.policy_service import ExamplePolicy, ExamplePolicyError
from playground.team_call import PlaygroundError, check_simulable, simulated_cloud
from playground.teamfile import TeamFile, run_request
from playground.watch import CallWatch, build_watched, timeline_written
from simulators.cloud import Cloud
from simulators.manager import ToolResult
from teamrunner.config import Settings
from teamrunner.contract import RemotePolicy, RunRequest
from teamrunner.errors import InvalidRequest, StartError
from teamrunner.lifecycle.registry import SessionRegistry
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.lifecycle.session import BuiltCall
from teamrunner.observe.journal import CallJournal, EndReason
from teamrunner.plan import CallPlan, function_name, plan_call
from teamrunner.providers import key_variables

if TYPE_CHECKING:
    from playground.whisker import Whisker

# The path pipecat's dev runner serves its eval websocket at, and `pipecat eval run`'s default.
WS_PATH = "/ws"
# A websocket close code for a connection that is not the eval harness's (policy violation).
NOT_AN_EVAL = 1008
# And for a call that could not start (server error).
CALL_FAILED = 1011


def provider_keys(environ: Mapping[str, str] | None = None) -> list[str]:
    """The provider key variables set in the environment: with any, the real providers run."""
    env = os.environ if environ is None else environ
    return [name for name in key_variables() if env.get(name)]


class EvalBot:
    """A team on pipecat's eval websocket, with the simulators it needs around it.

    Args:
        team: The team file.
        host: Where to listen.
        port: The port (0: any free one; ``url`` says which).
        simulated: Use the scripted stand-in LLM even when provider keys are set.
        example_policy: Replace the team's remote policy with the example service,
            started for the bot (as ``teamrunner demo --policy`` does).
        echo: Called with one line per call the harness starts and ends, and per timeline
            written (a call that cannot start is also printed on stderr, whatever
            ``echo`` does).
        out: Where each call's timeline is written (None: nowhere).
        names: The names of the timelines of the first calls, in order (``.html`` added).
        whisker: pipecat's Whisker, serving, to send every call's frames to.

    Raises:
        PlaygroundError: (on start) the team cannot run here as asked.
    """

    def __init__(
        self,
        team: TeamFile,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        simulated: bool = False,
        example_policy: bool = False,
        echo: Callable[[str], None] = print,
        out: Path | None = None,
        names: Iterable[str] = (),
        whisker: Whisker | None = None,
    ) -> None:
        self.team = team
        self.real = not simulated and bool(provider_keys())
        self._host = host
        self._port = port
        self._example_policy = example_policy
        self._echo = echo
        self._tools = {
            function_name(name): ToolResult.ok(tool.result)
            for name, tool in team.tool_results.items()
        }
        self._cloud: Cloud | None = None
        self._policy: ExamplePolicy | None = None
        self._runtime: Runtime | None = None
        self._sessions: SessionRegistry | None = None
        self._server: _Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._out = out
        self._names = iter(names)
        self._whisker = whisker
        # Each call's transport and watch, from its connection until the call builder
        # takes them.
        self._transports: dict[str, tuple[EvalSocket, CallWatch]] = {}
        self._calls = 0
        # The calls in progress, each done once it ended and its timeline is written.
        self._in_progress: set[asyncio.Future[None]] = set()
        # The timelines written, in the order the calls ended.
        self.timelines: list[Path] = []

    @property
    def llm(self) -> str:
        """What answers as the team's LLMs, for the user to read."""
        if self.real:
            return f"the team's own providers ({', '.join(provider_keys())} set)"
        return "scripted keyword brain on the OpenAI simulator (not a model)"

    @property
    def url(self) -> str:
        """The websocket URL for ``pipecat eval run --bot-url``."""
        assert self._server is not None, "start the bot first"
        port = self._server.servers[0].sockets[0].getsockname()[1]
        return f"ws://{self._host}:{port}{WS_PATH}"

    async def start(self) -> None:
        if not self.real:
            check_simulable(self.team)
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        self._cloud = simulated_cloud(self.team)
        await self._cloud.start()
        if self._example_policy:
            self._policy = ExamplePolicy(self.team.remote_policy)
            try:
                await self._policy.start()
            except ExamplePolicyError as e:
                raise PlaygroundError(str(e)) from e
        settings = self._settings(self._cloud)
        # What every scenario's call gets, checked as /run checks it, before any is run.
        self._plan(str(uuid.uuid4()), voice=False, settings=settings)
        self._runtime = Runtime.create(settings)
        self._sessions = SessionRegistry(self._runtime, self._build)
        app = FastAPI()
        app.add_api_websocket_route(WS_PATH, self._serve_call)
        # Bound here, so a port in use is an error to report rather than uvicorn's exit.
        try:
            listener = socket.create_server((self._host, self._port))
        except OSError as e:
            raise PlaygroundError(f"cannot listen on {self._host}:{self._port}: {e}") from e
        self._server = _Server(uvicorn.Config(app, log_level="warning"))
        self._serving = asyncio.get_running_loop().create_task(self._server.serve([listener]))
        while not self._server.started:
            if self._serving.done():
                self._serving.result()
                raise PlaygroundError("the eval bot's server stopped before it started")
            await asyncio.sleep(0.01)

    def _settings(self, cloud: Cloud) -> Settings:
        # The bot shares this process with the simulators, so the load it would measure
        # is theirs too: every call the harness starts is taken.
        if self.real:
            environ = {**os.environ, "PIPECATCALL_ADDRESS": cloud.manager.address}
        else:
            environ = cloud.environment()
        return replace(Settings.from_env(environ), port=0, load_threshold=0.0)

    async def stop(self) -> None:
        if self._server is not None and self._serving is not None:
            self._server.should_exit = True
            await asyncio.gather(self._serving, return_exceptions=True)
        if self._sessions is not None:
            await self._sessions.end_all(EndReason.SHUTDOWN, "the eval bot stopped")
            await self._sessions.close()
        if self._runtime is not None:
            await self._runtime.close()
        if self._policy is not None:
            await self._policy.stop()
        if self._cloud is not None:
            await self._cloud.stop()
        self._server = self._serving = self._sessions = self._runtime = None
        self._policy = self._cloud = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _serve_call(self, websocket: WebSocket) -> None:
        """One connection of the harness: a call from its start to its end."""
        await websocket.accept()
        try:
            flags = await read_eval_connect(websocket)
        except NotAnEval as e:
            await websocket.close(NOT_AN_EVAL, reason=str(e))
            return
        # Named as it connects: the harness runs its scenarios one at a time, in order.
        self._calls += 1
        timeline = next(self._names, None) or f"call-{self._calls:02d}"
        ended = asyncio.get_running_loop().create_future()
        self._in_progress.add(ended)
        try:
            await self._call(websocket, flags, timeline)
        finally:
            ended.set_result(None)
            self._in_progress.discard(ended)

    async def _call(self, websocket: WebSocket, flags: EvalConnectionFlags, timeline: str) -> None:
        cloud, runtime, sessions = self._cloud, self._runtime, self._sessions
        assert cloud is not None and runtime is not None and sessions is not None, "not started"
        call_id = str(uuid.uuid4())
        cloud.manager.expect_call(call_id, tools=self._tools)
        voice = not flags.skip_tts
        name = f"call {call_id[:8]} ({'audio' if voice else 'text'})"
        try:
            plan = self._plan(call_id, voice=voice, settings=runtime.settings)
        except PlaygroundError as e:
            _problem(f"{name}: {e}")
            await websocket.close(CALL_FAILED, reason="the team's /run request is invalid")
            return
        watch = CallWatch(self._whisker)
        self._transports[call_id] = (EvalSocket.accept(websocket, flags), watch)
        try:
            session = await sessions.start(plan)
        except StartError as e:
            _problem(f"{name} could not start: {e}")
            return
        finally:
            self._transports.pop(call_id, None)
        self._echo(f"{name} up")
        await session.finished.wait()
        self._echo(f"{name} ended: {session.end_detail or session.journal.end_reason}")
        if self._out is not None:
            title = f"{self.team.name or self.team.team.id}: {timeline}"
            path = self._out / f"{timeline}.html"
            if await asyncio.to_thread(watch.write, path, title=title) is not None:
                self.timelines.append(path)
                self._echo(timeline_written(path))

    async def calls_ended(self, timeout: float) -> None:
        """Wait, up to ``timeout`` seconds, until every call in progress has ended.

        A call ends once the harness disconnects, and its timeline is written then.
        """
        if self._in_progress:
            await asyncio.wait(set(self._in_progress), timeout=timeout)

    def _plan(self, call_id: str, *, voice: bool, settings: Settings) -> CallPlan:
        """The call's plan, from the /run pipecat-manager would send.

        Raises:
            PlaygroundError: the runner would refuse that /run, saying why.
        """
        try:
            request = RunRequest.model_validate(self._request(call_id, voice))
            return plan_call(request, settings)
        except (ValidationError, InvalidRequest) as e:
            refused = f"pipecat-manager's /run for this team would be refused: {e}"
            raise PlaygroundError(refused) from e

    def _request(self, call_id: str, voice: bool) -> dict[str, Any]:
        """The /run body pipecat-manager would send: a chat session's when the scenario is text."""
        policy: RemotePolicy | None = self._policy.remote_policy if self._policy else None
        body = run_request(self.team, call_id, policy)
        if not voice:
            body.pop("stt_type", None)
            body.pop("tts_type", None)
        return body

    def _build(self, plan: CallPlan, runtime: Runtime, journal: CallJournal) -> BuiltCall:
        """``run.build_call`` over the harness's websocket (``main.build_call``'s counterpart)."""
        transport, watch = self._transports.pop(plan.id)
        return build_watched(plan, runtime, journal, transport, watch)


def _problem(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: the ``teamrunner`` command owns signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
