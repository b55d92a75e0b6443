"""What every request passes through before a route sees it, installed the same on every app.

Outermost first::

    UnexpectedErrors   a bug is a 500 in the error shape; the connection stays open
    ProbeListener      on RUNNER_METRICS_PORT, /health, /ready and /metrics alone
    AllowedHosts       the Host header names the runner (DNS rebinding)
    BearerToken        RUNNER_API_TOKEN, when set, on everything but the probes
    BodyLimits         the body whole, within RUNNER_MAX_BODY_BYTES and RUNNER_BODY_TIMEOUT_SECS
    (inner)            what an application serves below its routes (a pool's front: /run, /stop)
    JSONBodyRoute      the body parsed by one bounded parser; what it refuses is a 422

and every error any of them, or a route, raises is answered in the one
error shape (``answers.py``). A single runner (``main.py``) and a pool's
front (``teamrunner.workers.front``) install it alike, so Go reads the same
answers from either.

A pool's workers install it without the probes' listener, which the front
serves, and without the Host and token checks: each is
reached only by its front, over a Unix socket in a directory of mode 0700
that only the runner's own user can open, and a process that can open it
could as well read the token from the front's environment. The front makes
both checks before it passes a request on, and passes no header on but the
body's ``Content-Type``.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from starlette.middleware import Middleware

from teamrunner.config import Settings
from teamrunner.serving.access import AllowedHosts, BearerToken, allowed_hosts
from teamrunner.serving.answers import OnRefused, UnexpectedErrors, install_error_answers
from teamrunner.serving.json_body import JSONBodyRoute
from teamrunner.serving.limits import BodyLimits
from teamrunner.serving.listeners import ProbeListener


def install_edge(
    app: FastAPI,
    settings: Settings,
    on_refused: OnRefused,
    redact: Callable[[str], str],
    *,
    behind_front: bool = False,
    inner: Middleware | None = None,
) -> None:
    """Install the edge on ``app``, before its routes are added.

    Args:
        on_refused: Told of every refused request (to log and count it).
        redact: Scrubs keys from text an answer or a log line would carry.
        behind_front: ``app`` is a pool's worker: its front listens for the probes and
            checks Host and token.
        inner: Middleware that sees a request once every check has passed, before
            the routes (it answers its own refusals: the exception handlers are
            inside it).
    """
    # FastAPI's hook for how a route reads its request (its documented way to set it).
    app.router.route_class = JSONBodyRoute
    install_error_answers(app, on_refused, redact)
    # Starlette runs the middleware added last first.
    if inner is not None:
        app.add_middleware(inner.cls, *inner.args, **inner.kwargs)
    app.add_middleware(
        BodyLimits,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_secs=settings.body_timeout_secs,
        on_refused=on_refused,
    )
    if not behind_front:
        if settings.api_token:
            app.add_middleware(BearerToken, token=settings.api_token, on_refused=on_refused)
        hosts = allowed_hosts(settings)
        if hosts is not None:
            app.add_middleware(
                AllowedHosts, hosts=hosts, probe_port=settings.metrics_port, on_refused=on_refused
            )
        if settings.metrics_port:
            app.add_middleware(ProbeListener, port=settings.metrics_port, on_refused=on_refused)
    app.add_middleware(UnexpectedErrors, on_refused=on_refused, redact=redact)
