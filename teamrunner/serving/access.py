"""Who may drive calls: the Host names the API answers to, and its optional token.

Both checks are ASGI middleware, made before a request's body is read, and
answer in the runner's error shape on a connection that stays open (uvicorn
skips the unread body). Neither ever quotes what the request sent.

**Host.** A page in a browser on the runner's machine can reach a runner
listening on loopback by pointing a name of its own at 127.0.0.1 (DNS
rebinding); its requests then carry that name as their ``Host``. So only
the names the runner is served as are answered, on any port:
``localhost``, ``127.0.0.1`` and ``::1`` always (pipecat-manager calls
``localhost:8000``); ``RUNNER_HOST`` when it is one address, or the
machine's own name and the addresses it resolves to when it is every
address (``0.0.0.0``, ``::``), which is how Kubernetes and Docker address a
pod or a container; and each name of ``RUNNER_ALLOWED_HOSTS`` (``*``: any).
Anything else is a 400. Requests on the probes' own listener
(``listeners.py``) are not checked: it serves nothing but the read-only
probes, and a scraper or a kubelet names the pod by an IP no setting knows.

**Token.** With ``RUNNER_API_TOKEN`` set, every request but the read-only
probes (``PROBES``) must carry ``Authorization: Bearer <token>``, compared
in constant time; anything else is a 401 with ``WWW-Authenticate: Bearer``.
Every path is closed unless it is a probe, so a route added later is too.
The token is one of the secrets the redactor scrubs (``Settings.secrets``).
"""

from __future__ import annotations

import hmac
import socket

from pydantic import SecretStr

from teamrunner.config import Settings
from teamrunner.errors import Problem
from teamrunner.serving.answers import ASGIApp, OnRefused, Receive, Scope, Send, send_error
from teamrunner.serving.listeners import PROBES, on_probe_listener

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
EVERY_ADDRESS = frozenset({"0.0.0.0", "::", ""})

REALM = 'Bearer realm="pipecat-team-runner"'


def host_name(value: str) -> str:
    """The name in a ``Host`` header or a setting, bare: ``[::1]:80`` → ``::1``."""
    name = value.strip().lower()
    if name.startswith("["):
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    return name.removesuffix(".")


def allowed_hosts(settings: Settings) -> frozenset[str] | None:
    """The ``Host`` names the API answers to under ``settings``; None when any is."""
    listed = {host_name(entry) for entry in settings.allowed_hosts.split(",") if entry.strip()}
    if "*" in listed:
        return None
    served_as = host_name(settings.host)
    own = _own_names() if served_as in EVERY_ADDRESS else {served_as}
    return frozenset(LOOPBACK_NAMES | own | listed)


def _own_names() -> set[str]:
    """This machine's name and the addresses it resolves to (a pod's IP, a container's)."""
    name = socket.gethostname().lower()
    try:
        found = socket.getaddrinfo(name, None)
    except OSError:
        found = []
    return {name, *(str(info[4][0]).partition("%")[0] for info in found)}


def _header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return bytes(value)
    return None


class AllowedHosts:
    """Answers a request whose ``Host`` is not one the runner is served as with 400.

    Args:
        hosts: From :func:`allowed_hosts`.
        probe_port: The probes' own listener, not checked (0: there is none).
    """

    def __init__(
        self, app: ASGIApp, *, hosts: frozenset[str], probe_port: int, on_refused: OnRefused
    ) -> None:
        self._app = app
        self._hosts = hosts
        self._probe_port = probe_port
        self._on_refused = on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not on_probe_listener(scope, self._probe_port):
            host = _header(scope, b"host")
            if host is None or host_name(host.decode("latin-1")) not in self._hosts:
                message = (
                    "the Host header does not name this runner; "
                    "add the name to RUNNER_ALLOWED_HOSTS on the runner"
                )
                self._on_refused(scope["method"], scope["path"], 400, message)
                problem = Problem("Host", "not a name this runner is served as")
                await send_error(send, 400, message, [problem])
                return
        await self._app(scope, receive, send)


class BearerToken:
    """Answers a request without the runner's token with 401; the probes are open."""

    def __init__(self, app: ASGIApp, *, token: SecretStr, on_refused: OnRefused) -> None:
        self._app = app
        self._token = token.get_secret_value().encode()
        self._on_refused = on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in PROBES:
            presented = _header(scope, b"authorization")
            scheme, _, credential = (presented or b"").partition(b" ")
            if presented is None or scheme.lower() != b"bearer":
                await self._refuse(scope, send, "missing", "missing", REALM)
                return
            if not hmac.compare_digest(credential.strip(), self._token):
                challenge = f'{REALM}, error="invalid_token"'
                await self._refuse(scope, send, "wrong", "not the runner's token", challenge)
                return
        await self._app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, send: Send, what: str, problem: str, challenge: str
    ) -> None:
        message = f"the API token is {what}: send Authorization: Bearer <RUNNER_API_TOKEN>"
        self._on_refused(scope["method"], scope["path"], 401, message)
        await send_error(
            send, 401, message, [Problem("Authorization", problem)], {"WWW-Authenticate": challenge}
        )
