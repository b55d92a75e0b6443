"""The runner's errors, in one small hierarchy.

::

    RunnerError
    ├── ConfigError          the environment is wrong; the process does not start
    ├── RequestError         a request the runner refuses                  → 4xx, 503
    │   ├── InvalidRequest   one or more fields are wrong (all listed)     → 400
    │   ├── SessionConflict  a call with that id is already running        → 409
    │   ├── SessionNotFound  no call with that id is running               → 404
    │   ├── AtCapacity       its load, or RUNNER_MAX_CALLS, leaves no room → 503
    │   ├── Draining         the runner is shutting down                   → 503
    │   └── NoWorker*        a pool's front has no worker up yet           → 503
    ├── StartError           the call's pipeline could not be brought up   → 500
    ├── PolicyError*         the remote policy gave no first state (the start fails)
    ├── EspeakError*         libespeak-ng could not be loaded, or refused to speak
    │   └── UnknownVoiceError*  no espeak-ng voice by that id (a problem of the request)
    ├── MemberSwitchError    a team transition could not be made (in-call, never HTTP)
    ├── SummaryError         no summary for a handoff in time (in-call: append instead)
    └── WorkerStartError     a worker process did not start (the runner exits, status 3)

    * still defined beside the code that raises it, to move here:
      ``NoWorker`` in ``teamrunner.workers.front``, ``PolicyError`` in
      ``teamrunner.policy.client``, ``EspeakError`` and ``UnknownVoiceError``
      in ``teamrunner.providers.espeak``.

Errors raised inside a running call never leave it: the call logs them or
reports them as pipecat errors, and goes on.

Every message says what is wrong and what would fix it, names the field or
component, and never contains a key: errors are built from field paths and
provider names, not from the request's values.
"""

from __future__ import annotations

from dataclasses import dataclass


class RunnerError(Exception):
    """Base class of every error the runner raises on purpose."""


class ConfigError(RunnerError):
    """The environment holds a value the runner cannot use."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a request: where, and why."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class RequestError(RunnerError):
    """A request the runner refuses; ``status`` is the HTTP status to answer with."""

    status = 400
    # Seconds after which the client may try again (a Retry-After header), if any.
    retry_after: int | None = None

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []


class InvalidRequest(RequestError):
    """One or more fields of a request are wrong; every problem is listed at once."""

    status = 400

    def __init__(self, problems: list[Problem]) -> None:
        count = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
        summary = "; ".join(str(p) for p in problems)
        super().__init__(f"invalid request ({count}): {summary}", problems)


class SessionConflict(RequestError):
    """A call with this id is already running."""

    status = 409


class SessionNotFound(RequestError):
    """No call with this id is running."""

    status = 404


class AtCapacity(RequestError):
    """The runner runs as many calls as it may; another runner should take this one."""

    status = 503
    retry_after = 2


class Draining(RequestError):
    """The runner is shutting down and takes no new call."""

    status = 503
    retry_after = 5


class StartError(RunnerError):
    """A call could not be started; ``component`` names the part that failed."""

    def __init__(self, component: str, reason: str) -> None:
        super().__init__(f"{component}: {reason}")
        self.component = component
        self.reason = reason


class MemberSwitchError(RunnerError):
    """A router cannot move to the requested member; the call stays where it is."""


class SummaryError(RunnerError):
    """No summary could be made in time; the message says why."""


class WorkerStartError(RunnerError):
    """A worker process did not come up when the runner started."""
