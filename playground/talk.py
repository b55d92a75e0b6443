"""``teamrunner talk``: talking to a team from the browser, its real call over WebRTC.

``Talk`` serves, on 127.0.0.1, a talk page and the SmallWebRTC signalling
that pipecat's own development runner (``pipecat.runner.run``) serves:

* ``POST /api/offer`` (and ``POST /sessions/{id}/api/offer``) takes the
  browser's SDP offer and answers pipecat's; ``PATCH`` on the same paths
  takes ICE candidates found later. No ICE server is offered: the browser and
  the runner are on one machine, which may have no network.
* ``POST /start`` answers a session id, as the runner does for its prebuilt
  clients, which offer on ``/sessions/{id}/api/offer`` next.

``/`` is the talk page (``talk.html``): one file, nothing fetched, that
speaks that signalling and RTVI over the peer's data channel and shows the
conversation with the member who said each line, and each handoff.
``/prebuilt/`` is pipecat's prebuilt client
(``pipecat-ai-small-webrtc-prebuilt``), served from its package; its
microphone handling is Daily's, which loads Daily's call machine from
``c.daily.co`` when it connects, so it works only with a network.

Each peer connection is one call, the team's real one: the request
pipecat-manager would post (``teamfile.run_request``), planned as ``/run``
plans it, built by ``run.build_call`` over the browser's peer
(``browser_peer.BrowserPeer``) in place of pipecat-manager's sockets, and run
by the production lifecycle (``teamrunner.lifecycle.session.Session``), with
the routers, flows, greetings, policy and tools of production. Go's tools
answer from the team file's ``tool_results`` on the pipecat-manager
simulator, as in ``teamrunner call``, which also takes the member-switched
notices.

Each call is watched (``watch.CallWatch``): once it ends, its timeline is
written to ``out`` as ``call-01.html``, ``call-02.html``, ... in the order the
calls came up; and its frames go to pipecat's Whisker when a ``whisker``
serves.

Providers: a provider whose key is in the environment (``OPENAI_API_KEY``,
``DEEPGRAM_API_KEY``, ...) is the real one; any other is its simulator, so on
the embedded default (Whisper, Piper, espeak) the LLM is the scripted
stand-in of ``teamrunner demo`` and nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import os
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import uvicorn
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from loguru import logger
from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
from pipecat.transports.smallwebrtc.request_handler import (
    SmallWebRTCPatchRequest,
    SmallWebRTCRequest,
    SmallWebRTCRequestHandler,
)
from pydantic import BaseModel, ConfigDict

from playground.browser_peer import BrowserPeer, PeerNotConnected, peer_connected
from playground.talk_events import TalkEvents
from playground.team_call import PlaygroundError, check_simulable, simulated_cloud
from playground.teamfile import TeamFile, run_request
from playground.watch import CallWatch, build_watched, timeline_written
from simulators.cloud import KEYS, Cloud
from simulators.manager import ToolResult
from teamrunner.config import Settings
from teamrunner.contract import RunRequest
from teamrunner.errors import RunnerError
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.lifecycle.session import BuiltCall, Session
from teamrunner.lifecycle.warmup import WarmUp
from teamrunner.observe.journal import CallJournal, EndReason
from teamrunner.plan import CallPlan, function_name, plan_call

if TYPE_CHECKING:
    from playground.whisker import Whisker

# How long a browser that sent its offer may take to connect its peer.
CONNECT_TIMEOUT_SECS = 30.0

# Each provider key, and the variable that points that provider at its simulator.
PROVIDER_ENDPOINTS = {
    "OPENAI_API_KEY": "OPENAI_BASE_URL",
    "XAI_API_KEY": "XAI_BASE_URL",
    "DEEPGRAM_API_KEY": "DEEPGRAM_BASE_URL",
    "CARTESIA_API_KEY": "CARTESIA_BASE_URL",
    "ELEVENLABS_API_KEY": "ELEVENLABS_BASE_URL",
}


class StartAnswer(BaseModel):
    """The answer to the prebuilt client's ``POST /start`` (pipecat runner's shape)."""

    model_config = ConfigDict(populate_by_name=True)

    sessionId: str


def talk_environment(cloud: Cloud, environ: Mapping[str, str]) -> dict[str, str]:
    """The runner's environment: ``environ``, with every provider it has no key for simulated."""
    env = dict(environ)
    env["PIPECATCALL_ADDRESS"] = cloud.manager.address
    endpoints = cloud.endpoints()
    for key, endpoint in PROVIDER_ENDPOINTS.items():
        if not environ.get(key):
            env[key] = KEYS[key]
            env[endpoint] = endpoints[endpoint]
    return env


def real_providers(environ: Mapping[str, str]) -> list[str]:
    """The providers whose keys are set, so whose real service a call uses."""
    keys = [*PROVIDER_ENDPOINTS, "GOOGLE_API_KEY"]
    return [key.split("_")[0].lower() for key in keys if environ.get(key)]


def speech_models(plan: CallPlan) -> list[str]:
    """The local speech models ``plan``'s members use, to load before the first call."""
    members = plan.members.values()
    turns = [plan.turn, *(m.turn for m in members if m.turn is not None)]
    used = {
        "silero": plan.hears,
        "smart-turn": plan.hears and any(t.smart_turn for t in turns),
        "whisper": any(m.stt_type == "whisper" for m in members),
        "piper": any(m.tts_type == "piper" for m in members),
    }
    return [name for name, wanted in used.items() if wanted]


class Talk:
    """The talk server: the talk page, pipecat's prebuilt client, their signalling, a call per peer.

    Args:
        team: The team to talk to (checked).
        port: Where to serve on 127.0.0.1 (0: any free port).
        echo: Prints the conversation and what the server does.
        environ: Where provider keys are looked up (default: ``os.environ``).
        out: Where each call's timeline is written once it ends (None: nowhere).
        whisker: pipecat's Whisker, serving, to send every call's frames to.
    """

    def __init__(
        self,
        team: TeamFile,
        *,
        port: int = 0,
        echo: Callable[[str], None] = print,
        environ: Mapping[str, str] | None = None,
        out: Path | None = None,
        whisker: Whisker | None = None,
    ) -> None:
        self.team = team
        self.echo = echo
        self._out = out
        self._whisker = whisker
        self._environ = dict(os.environ if environ is None else environ)
        if not self._environ.get("GOOGLE_API_KEY"):
            check_simulable(team)
        self._cloud = simulated_cloud(team)
        self._cloud.manager.tools = {
            function_name(name): ToolResult.ok(tool.result)
            for name, tool in team.tool_results.items()
        }
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port: int = self._socket.getsockname()[1]
        self._runtime: Runtime | None = None
        self._signalling = SmallWebRTCRequestHandler(ice_servers=[])
        self._server = _Server(
            uvicorn.Config(self._app(), log_level="warning", lifespan="off", ws="none")
        )
        self._serving: asyncio.Task[None] | None = None
        self._calls: set[asyncio.Task[None]] = set()
        self.sessions: list[Session] = []
        self.events: list[TalkEvents] = []
        # The timelines written, in the order the calls ended.
        self.timelines: list[Path] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the talk server is not started")
        return self._runtime

    async def start(self) -> None:
        """Start the simulators, warm the call stack up, and serve.

        Raises:
            PlaygroundError: the team cannot be planned as a call, or its models not loaded.
        """
        await self._cloud.start()
        try:
            env = talk_environment(self._cloud, self._environ)
            settings = replace(Settings.from_env(env), load_threshold=0.0)
            self._runtime = Runtime.create(settings)
            # A team that cannot be planned fails here, once; the first call comes up fast.
            models = speech_models(self._plan(str(uuid.uuid4())))
            try:
                await WarmUp(("run",), self.runtime.shared, models).wait()
            except RuntimeError as e:
                raise PlaygroundError(str(e)) from e
            self._serving = asyncio.get_running_loop().create_task(
                self._server.serve(sockets=[self._socket])
            )
            while not self._server.started:
                if self._serving.done():
                    self._serving.result()
                    raise PlaygroundError("the talk server stopped before it started")
                await asyncio.sleep(0.01)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """End every call, stop serving, and stop the simulators."""
        for session in self.sessions:
            await session.stop(EndReason.SHUTDOWN, "teamrunner talk stopped")
        for task in list(self._calls):
            task.cancel()
        if self._calls:
            await asyncio.wait(self._calls)
        await self._signalling.close()
        if self._serving is not None:
            self._server.should_exit = True
            await self._serving
            self._serving = None
        self._socket.close()
        if self._runtime is not None:
            await self._runtime.close()
        await self._cloud.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _plan(self, call_id: str) -> CallPlan:
        try:
            return plan_call(
                RunRequest.model_validate(run_request(self.team, call_id)), self.runtime.settings
            )
        except (RunnerError, ValueError) as e:
            raise PlaygroundError(f"the team cannot be run as a call: {e}") from e

    def _app(self) -> FastAPI:
        app = FastAPI(title="teamrunner talk", docs_url=None, redoc_url=None, openapi_url=None)

        @app.post("/start")
        async def start() -> StartAnswer:
            """A session for the prebuilt client; its call starts with its offer."""
            return StartAnswer(sessionId=str(uuid.uuid4()))

        @app.post("/api/offer")
        @app.post("/sessions/{session_id}/api/offer")
        async def offer(request: SmallWebRTCRequest) -> Any:
            """The browser's SDP offer: pipecat's answer, and the call once the peer is up."""

            async def connected(connection: SmallWebRTCConnection) -> None:
                task = asyncio.get_running_loop().create_task(self._talk(connection))
                self._calls.add(task)
                task.add_done_callback(self._calls.discard)

            return await self._signalling.handle_web_request(request, connected)

        @app.patch("/api/offer")
        @app.patch("/sessions/{session_id}/api/offer")
        async def candidates(request: SmallWebRTCPatchRequest) -> dict[str, str]:
            """ICE candidates the browser found after its offer."""
            await self._signalling.handle_patch_request(request)
            return {"status": "success"}

        page = _talk_page(self.team.name or self.team.team.id)

        @app.get("/", response_class=HTMLResponse)
        async def talk_page() -> str:
            """The talk page."""
            return page

        app.mount("/prebuilt", _prebuilt_client())
        return app

    async def _talk(self, connection: SmallWebRTCConnection) -> None:
        """One call over one browser peer, from its connection to its end."""
        try:
            await peer_connected(connection, CONNECT_TIMEOUT_SECS)
        except PeerNotConnected as e:
            self.echo(f"no call: {e}")
            await connection.disconnect()
            return
        plan = self._plan(str(uuid.uuid4()))
        peer = BrowserPeer(connection)
        events = TalkEvents(plan, peer.output(), self.echo)
        watch = CallWatch(self._whisker)
        name = f"call-{len(self.sessions) + 1:02d}"

        def build(plan: CallPlan, runtime: Runtime, journal: CallJournal) -> BuiltCall:
            return build_watched(plan, runtime, journal, peer, watch, observers=[events])

        def finished(session: Session) -> None:
            # However the call ended: the talk server stopping cancels this task, not it.
            self._write(watch, name)

        session = Session(plan, self.runtime, build, on_finished=finished)
        self.sessions.append(session)
        self.events.append(events)
        try:
            await session.start()
        except RunnerError as e:
            self.echo(f"the call could not start: {e}")
            await connection.disconnect()
            return
        self.echo(f"call up in {session.startup_secs:.2f} s: {plan.start_member.name} has it")
        await session.finished.wait()
        self.echo(f"call ended ({session.journal.end_reason}); press connect to talk again")

    def _write(self, watch: CallWatch, name: str) -> None:
        if self._out is None:
            return
        title = f"{self.team.name or self.team.team.id}: {name}"
        path = watch.write(self._out / f"{name}.html", title=title)
        if path is not None:
            self.timelines.append(path)
            self.echo(timeline_written(path))


class _Server(uvicorn.Server):
    """uvicorn's server, leaving signals to the program around it (``playground.interrupt``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _talk_page(team: str) -> str:
    text = resources.files("playground").joinpath("talk.html").read_text()
    title = f"{html.escape(team)}: teamrunner talk"
    return text.replace(">teamrunner talk</h1>", f">{title}</h1>")


def _prebuilt_client() -> Any:
    """The prebuilt client's files, as its package mounts them (it prints where it looked)."""
    with contextlib.redirect_stdout(io.StringIO()):
        from pipecat_ai_small_webrtc_prebuilt.frontend import SmallWebRTCPrebuiltUI
    logger.debug("serving the prebuilt client from its package")
    return SmallWebRTCPrebuiltUI
