"""Planning a call's remote policy: the service's address, its config, token and timeout.

pydantic has already checked the shape (``contract.RemotePolicy``: a URL of
some text, an object for ``config``, a timeout above 0). Here the URL is
checked for what the client will do with it, appending ``/session`` and
``/tool-call``: it must be an ``http://`` or ``https://`` base with a host,
and no query or fragment. The problem names the field and never quotes it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from teamrunner.contract import RemotePolicy
from teamrunner.errors import Problem
from teamrunner.plan.model import PolicyPlan

_NOT_A_BASE = (
    "is not the policy service's base URL: give http:// or https://, a host and an "
    "optional path, with no query or fragment (/session and /tool-call are posted below it)"
)


def plan_policy(policy: RemotePolicy | None, problems: list[Problem]) -> PolicyPlan | None:
    if policy is None:
        return None
    url = policy.url.strip()
    if not _is_base_url(url):
        problems.append(Problem("remote_policy.url", _NOT_A_BASE))
        return None
    return PolicyPlan(
        url=url.rstrip("/"),
        config=dict(policy.config),
        token=policy.token.get_secret_value() if policy.token else None,
        timeout_secs=policy.timeout_secs,
    )


def _is_base_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number in range
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and port != 0
        and not parts.query
        and not parts.fragment
    )
