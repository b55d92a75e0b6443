"""The runner's configuration: one typed object, built from the environment by a function.

Nothing here is read at import time. Which variables hold provider keys and
endpoints is not listed here: each provider names its own when it registers
(``teamrunner.providers``). ``Settings.from_env()`` reads the
environment once, at start-up, and the resulting object is passed down; tests
build a ``Settings`` from plain values instead. Keys are held as
``SecretStr`` so that printing a ``Settings`` never shows one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import SecretStr

from teamrunner.errors import ConfigError
from teamrunner.providers import endpoint_variables, key_variables

_Number = TypeVar("_Number", int, float)


@dataclass(frozen=True)
class Settings:
    """Everything the runner needs to know about its surroundings.

    Attributes:
        host: Address the HTTP API listens on (``RUNNER_HOST``).
        port: Port of the HTTP API (``RUNNER_PORT``).
        pipecatcall_address: ``host:port`` of pipecat-manager (``PIPECATCALL_ADDRESS``).
        keys: Provider keys from the environment, by variable name.
        endpoints: Provider endpoint overrides, by variable name.
        session_idle_secs: A call with no caller or bot activity for this long ends.
        start_timeout_secs: How long ``/run`` waits for a pipeline to come up.
        tool_timeout_secs: How long a tool call to pipecat-manager may take.
        notify_timeout_secs: How long a member-switched notification may take.
        log_json: Whether logs are written as one JSON object per line.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    pipecatcall_address: str = "localhost:8001"
    keys: Mapping[str, SecretStr] = field(default_factory=dict)
    endpoints: Mapping[str, str] = field(default_factory=dict)
    session_idle_secs: float = 180.0
    start_timeout_secs: float = 15.0
    tool_timeout_secs: float = 10.0
    notify_timeout_secs: float = 2.0
    log_json: bool = False

    @property
    def manager_http_url(self) -> str:
        """Base URL of pipecat-manager's HTTP side (tools, member switches)."""
        return f"http://{self.pipecatcall_address}"

    @property
    def manager_ws_url(self) -> str:
        """Base URL of pipecat-manager's websockets."""
        return f"ws://{self.pipecatcall_address}"

    def key(self, variable: str) -> str | None:
        """The key held in ``variable``, or None when it is unset or empty."""
        secret = self.keys.get(variable)
        value = secret.get_secret_value() if secret is not None else ""
        return value or None

    def secrets(self) -> list[str]:
        """Every key the environment holds, for the redactor."""
        return [secret.get_secret_value() for secret in self.keys.values()]

    def endpoint(self, variable: str) -> str | None:
        """The endpoint override held in ``variable``, or None."""
        return self.endpoints.get(variable) or None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from ``environ`` (default: ``os.environ``).

        Raises:
            ConfigError: naming the variable and what it should hold.
        """
        env = os.environ if environ is None else environ
        return cls(
            host=env.get("RUNNER_HOST", "127.0.0.1"),
            port=_number(env, "RUNNER_PORT", 8000, int),
            pipecatcall_address=env.get("PIPECATCALL_ADDRESS", "localhost:8001"),
            keys={name: SecretStr(env[name]) for name in key_variables() if env.get(name)},
            endpoints={name: env[name] for name in endpoint_variables() if env.get(name)},
            session_idle_secs=_number(env, "RUNNER_SESSION_IDLE_SECS", 180.0, float),
            start_timeout_secs=_number(env, "RUNNER_START_TIMEOUT_SECS", 15.0, float),
            tool_timeout_secs=_number(env, "RUNNER_TOOL_TIMEOUT_SECS", 10.0, float),
            notify_timeout_secs=_number(env, "RUNNER_NOTIFY_TIMEOUT_SECS", 2.0, float),
            log_json=env.get("RUNNER_LOG_JSON", "").lower() in ("1", "true", "yes"),
        )


def _number(env: Mapping[str, str], name: str, default: _Number, kind: type[_Number]) -> _Number:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(
            f"{name} has value {raw!r}: not a valid {kind.__name__}; unset it or give a number"
        ) from None
    if value <= 0:
        raise ConfigError(f"{name} has value {raw!r}: it must be greater than zero")
    return value
