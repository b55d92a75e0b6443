"""What the runner's HTTP API answers: one pydantic model per answer, and the one error shape.

These models are the OpenAPI schema's responses, so an operator or the Go
side can read from ``/openapi.json`` exactly what each route returns,
errors included.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class ProblemItem(BaseModel):
    """One thing wrong with a request: the field, by its path, and what it should hold."""

    field: str
    message: str


class ErrorAnswer(BaseModel):
    """Every error answer, whatever its status."""

    status: str = "error"
    error: str
    problems: list[ProblemItem] | None = None


class CallKind(StrEnum):
    """What a call carries, which is what it costs."""

    TEXT = "text"  # no caller audio, no voice: messages only
    SPEAKS = "speaks"  # a voice, but no caller audio
    VOICE = "voice"  # caller audio (VAD, turn-taking, STT), and usually a voice
    TEAM_VOICE = "team_voice"  # a voice call of several members, through the routers


class LoadReport(BaseModel):
    """How loaded a runner process is, and what it would admit now (``/ready``, ``/health``).

    Attributes:
        measured: The mean share of a core its calls kept busy over the last seconds.
        pending: The cost of the calls admitted too recently to show in ``measured``.
        projected: ``measured`` plus ``pending``: what admission judges by.
        threshold: ``RUNNER_LOAD_THRESHOLD``; a call is admitted while the
            projected load plus its cost stays within it (0: no admission by load).
        admits: For each kind of call, whether one would be admitted now.
    """

    measured: float
    pending: float
    projected: float
    threshold: float
    admits: dict[CallKind, bool]


class RunStarted(BaseModel):
    """``POST /run``: the call is up and running."""

    status: str = "ok"
    id: str
    team: bool
    members: int
    active_member: str | None
    startup_secs: float


class Stopped(BaseModel):
    """``POST /stop``: the call has ended and released everything."""

    status: str = "stopped"
    id: str


class Providers(BaseModel):
    """The providers this install can serve: what ``llm_type`` (before the dot),
    ``stt_type`` and ``tts_type`` may name. One whose optional extra is not
    installed is left out, and a ``/run`` naming it is a 400."""

    llm: list[str]
    stt: list[str]
    tts: list[str]

    @classmethod
    def servable(cls) -> Providers:
        """What this install can serve (looked up once per module per process)."""
        from teamrunner.providers import LLM, STT, TTS

        return cls(llm=LLM.servable(), stt=STT.servable(), tts=TTS.servable())


class Health(BaseModel):
    """``GET /health``: the runner is alive, and what it can serve."""

    status: str = "ok"
    sessions: int
    speech_models_loaded: int
    providers: Providers


class ProcessHealth(Health):
    """``GET /health`` of one runner process: alive, and how loaded it is."""

    load: LoadReport


class Ready(BaseModel):
    """``GET /ready``: the runner takes a new call; ``max_calls`` is None when uncapped."""

    status: str = "ready"
    calls: int
    max_calls: int | None


class ProcessReady(Ready):
    """``GET /ready`` of one runner process: with the load its admission judges by."""

    load: LoadReport


class MemberRef(BaseModel):
    id: str
    name: str


class CallInfo(BaseModel):
    """One running call, as an operator sees it."""

    id: str
    team: bool
    members: int
    active_member: MemberRef
    hears: bool
    speaks: bool
    age_secs: float


class Calls(BaseModel):
    """``GET /calls``: the running calls."""

    calls: list[CallInfo]


def error_body(message: str, problems: list[ProblemItem] | None = None) -> dict[str, object]:
    """The JSON of an error answer: what is wrong, and each problem's field."""
    answer = ErrorAnswer(error=message, problems=problems or None)
    return answer.model_dump(exclude_none=True)


def error_responses(*statuses: int) -> dict[int | str, dict[str, object]]:
    """OpenAPI ``responses`` for the error statuses a route may answer with."""
    meaning = {
        400: "The request's values cannot be served (every problem listed), or its Host "
        "is not a name the runner is served as",
        401: "RUNNER_API_TOKEN is set and Authorization: Bearer does not carry it",
        404: "No call with that id is running",
        408: "The request's headers or body arrived too slowly",
        409: "A call with that id is already running",
        413: "The body is larger than RUNNER_MAX_BODY_BYTES",
        422: "The body does not have the contract's shape",
        500: "The call could not come up (the component is named)",
        503: "Draining or at capacity: try again later or elsewhere (see Retry-After)",
    }
    return {s: {"model": ErrorAnswer, "description": meaning[s]} for s in statuses}
