"""Where the runner listens: the API's address, and the probes' own.

The API listens on ``RUNNER_HOST``:``RUNNER_PORT``, loopback by default,
since pipecat-manager calls it from its own pod. Prometheus, and the
kubelet's liveness and readiness probes, come from outside the pod and
address it by its IP. With ``RUNNER_METRICS_PORT`` set, a second listener on
``RUNNER_METRICS_HOST`` (every address by default) serves them ``/health``,
``/ready`` and ``/metrics`` (``PROBES``) and nothing else: any other path
there is a 404, so ``/run``, ``/stop`` and ``/calls`` stay on loopback.
Unset, there is no second listener. The API's listener goes on serving the
probes too, so a scraper or probe already pointed at it keeps working.

Both listeners are served by the one uvicorn server (it serves whatever
sockets it is given), in one process and event loop, with the same header
deadline and drain; a request's ``scope["server"]`` says which port it came
on, so the two ports must differ. In a pool the front listens on both; its
workers on their private sockets only.
"""

from __future__ import annotations

import socket

import uvicorn
from loguru import logger

from teamrunner.config import Settings
from teamrunner.errors import ConfigError
from teamrunner.serving.answers import ASGIApp, OnRefused, Receive, Scope, Send, send_error

# Read-only, and open to every caller whatever the token: what liveness and readiness
# probes and a Prometheus scraper ask for.
PROBES = frozenset({"/health", "/ready", "/metrics"})

# uvicorn's exit status when it cannot start, which the runner keeps.
STARTUP_FAILURE = 3


def listening_sockets(config: uvicorn.Config, settings: Settings) -> list[socket.socket]:
    """The API's socket, bound as uvicorn binds it, and the probes' when they have a port.

    Raises:
        ConfigError: the probes' port is the API's.
    """
    if settings.metrics_port and settings.metrics_port == settings.port:
        raise ConfigError(
            f"RUNNER_METRICS_PORT is RUNNER_PORT ({settings.port}): give the probes a port "
            "of their own, or unset RUNNER_METRICS_PORT to serve them with the API"
        )
    api = config.bind_socket()  # exits with status 3, as uvicorn does, if it cannot
    if not settings.metrics_port:
        return [api]
    return [api, _bind(settings.metrics_host, settings.metrics_port)]


def listening_on(settings: Settings) -> str:
    """Where the API listens, and the probes when they have a port of their own, for a log."""
    api = f"{settings.host}:{settings.port}"
    if not settings.metrics_port:
        return api
    return f"{api} (probes also on {settings.metrics_host}:{settings.metrics_port})"


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        logger.error(
            f"the probes cannot listen on {host}:{port} "
            f"(RUNNER_METRICS_HOST, RUNNER_METRICS_PORT): {e}"
        )
        raise SystemExit(STARTUP_FAILURE) from None
    sock.set_inheritable(True)
    return sock


def on_probe_listener(scope: Scope, probe_port: int) -> bool:
    """Whether the request came on the probes' listener (``probe_port``; 0: there is none)."""
    server = scope.get("server")
    return bool(probe_port) and server is not None and server[1] == probe_port


class ProbeListener:
    """Serves the probes alone on their own listener; anything else asked there is a 404."""

    def __init__(self, app: ASGIApp, *, port: int, on_refused: OnRefused) -> None:
        self._app = app
        self._port = port
        self._on_refused = on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and on_probe_listener(scope, self._port)
            and scope["path"] not in PROBES
        ):
            message = (
                f"the port {self._port} (RUNNER_METRICS_PORT) serves only "
                f"{', '.join(sorted(PROBES))}; the API is on RUNNER_PORT"
            )
            self._on_refused(scope["method"], scope["path"], 404, message)
            await send_error(send, 404, message)
            return
        await self._app(scope, receive, send)
