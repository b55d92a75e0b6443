"""The runner's configuration: one typed object, built from the environment by a function.

Nothing here is read at import time. ``Settings.from_env()`` reads the
environment once, at start-up, and the resulting object is passed down; tests
build a ``Settings`` from plain values instead. Each setting names its
environment variable once, in its field's metadata, and ``from_env`` reads
them all from there. Which variables hold provider keys and endpoints is not
listed here: each provider names its own when it registers
(``teamrunner.providers``). Keys are held as ``SecretStr`` so that printing a
``Settings`` never shows one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import SecretStr

from teamrunner.errors import ConfigError
from teamrunner.providers import endpoint_variables, key_variables

# The share of one core a worker's calls may keep busy before a voice call would fall
# behind real time, with a margin: set from bench/capacity.py (BENCHMARKS.md, section 5).
DEFAULT_LOAD_THRESHOLD = 0.75

# A token shorter than this is refused: it would be guessable, and too short to redact.
MIN_TOKEN_LENGTH = 16
NO_TOKEN = SecretStr("")

# The standard OpenTelemetry variables that, set, turn tracing on.
OTLP_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def _env(name: str, default: Any, *, zero_ok: bool = False, kind: type | None = None) -> Any:
    """A setting read from the environment variable ``name``.

    A number must be greater than zero, or zero or more when ``zero_ok``.
    ``kind`` is the value's type when the default (None: unset) does not say it.
    """
    return field(
        default=default,
        metadata={"env": name, "zero_ok": zero_ok, "kind": kind or type(default)},
    )


@dataclass(frozen=True)
class Settings:
    """Everything the runner needs to know about its surroundings.

    Attributes:
        host: Address the HTTP API listens on.
        port: Port of the HTTP API.
        allowed_hosts: ``Host`` names the API answers to besides loopback's and
            ``host``'s (comma-separated; ``*`` for any).
        api_token: When set, the ``Authorization: Bearer`` token every request but
            the probes (``/health``, ``/ready``, ``/metrics``) must carry.
        metrics_host: Address the probes' own listener listens on.
        metrics_port: Port of a listener serving only ``/health``, ``/ready`` and
            ``/metrics``; 0 (the default) for none.
        pipecatcall_address: ``host:port`` of pipecat-manager.
        keys: Provider keys from the environment, by variable name.
        endpoints: Provider endpoint overrides, by variable name.
        session_idle_secs: A call with no caller or bot activity for this long ends.
        start_timeout_secs: How long ``/run`` waits for a pipeline to come up.
        tool_timeout_secs: How long a tool call to pipecat-manager may take.
        notify_timeout_secs: How long a member-switched notification may take.
        keepalive_secs: How long an idle HTTP connection is kept open; longer
            than Go's 90 s idle pool, so Go never reuses a connection the runner
            is closing.
        header_timeout_secs: How long a client may take to send a request's headers.
        body_timeout_secs: How long a client may take to send a request's whole body,
            from its headers to its last byte.
        max_body_bytes: The largest request body accepted (413 past it).
        max_calls: An optional hard cap on the calls the whole runner (every worker
            together) runs at once; None (the default) leaves admission to the load.
        load_threshold: The share of one core a worker's calls may keep busy; a call
            whose cost would take the worker's projected load past it is refused
            (``teamrunner.lifecycle.admission``). 0 turns admission by load off.
        workers: Worker processes, each running calls on a core of its own
            behind one front process; 0 (the default) is one per core the
            process may use, and 1 is a single process with no front at all.
        drain_secs: After SIGTERM, how long live calls may go on before they are ended.
        llm_timeout_secs: An LLM request with no first byte, or no further byte,
            for this long is abandoned.
        llm_retries: How often an LLM request that got no answer at all is sent again.
        llm_fallback_line: What the caller hears, in the member's voice, when the
            LLM fails or stalls.
        tts_timeout_secs: A voice that produces no audio for this long after
            being given text is reported as stalled, and a handoff stops
            waiting for it to finish.
        caller_audio_ms: The caller audio frames the pipeline gets are joined from
            pipecat-manager's 20 ms frames to at least this long (0 or 20: as sent).
        provider_metrics: Whether pipecat measures providers' time to first byte
            (``runner_provider_ttfb_seconds``); each LLM and TTS request then
            sends a few more frames down the pipeline.
        preload_models: The speech models loaded before the runner reports ready
            (comma-separated: silero, smart-turn, whisper, piper; empty for none);
            any other is loaded by the first call that needs it.
        log_level: The least severe level logged (DEBUG, INFO, WARNING, ERROR).
        log_json: Whether logs are written as one flat JSON object per line.
        tracing: Whether pipecat's OpenTelemetry tracing is on.
    """

    host: str = _env("RUNNER_HOST", "127.0.0.1")
    port: int = _env("RUNNER_PORT", 8000, zero_ok=True)
    # Who may reach the API, and where the probes listen (teamrunner.serving).
    allowed_hosts: str = _env("RUNNER_ALLOWED_HOSTS", "")
    # _env returns a field(); ruff allows a call only with a type it knows is immutable.
    api_token: SecretStr = _env("RUNNER_API_TOKEN", NO_TOKEN)  # noqa: RUF009
    metrics_host: str = _env("RUNNER_METRICS_HOST", "0.0.0.0")
    metrics_port: int = _env("RUNNER_METRICS_PORT", 0, zero_ok=True)
    pipecatcall_address: str = _env("PIPECATCALL_ADDRESS", "localhost:8001")
    keys: Mapping[str, SecretStr] = field(default_factory=dict)
    endpoints: Mapping[str, str] = field(default_factory=dict)
    session_idle_secs: float = _env("RUNNER_SESSION_IDLE_SECS", 180.0)
    start_timeout_secs: float = _env("RUNNER_START_TIMEOUT_SECS", 15.0)
    tool_timeout_secs: float = _env("RUNNER_TOOL_TIMEOUT_SECS", 10.0)
    notify_timeout_secs: float = _env("RUNNER_NOTIFY_TIMEOUT_SECS", 2.0)
    keepalive_secs: float = _env("RUNNER_KEEPALIVE_SECS", 120.0)
    header_timeout_secs: float = _env("RUNNER_HEADER_TIMEOUT_SECS", 10.0)
    body_timeout_secs: float = _env("RUNNER_BODY_TIMEOUT_SECS", 10.0)
    max_body_bytes: int = _env("RUNNER_MAX_BODY_BYTES", 4 * 1024 * 1024)
    max_calls: int | None = _env("RUNNER_MAX_CALLS", None, kind=int)
    load_threshold: float = _env("RUNNER_LOAD_THRESHOLD", DEFAULT_LOAD_THRESHOLD, zero_ok=True)
    workers: int = _env("RUNNER_WORKERS", 0)
    drain_secs: float = _env("RUNNER_DRAIN_SECS", 120.0, zero_ok=True)
    llm_timeout_secs: float = _env("RUNNER_LLM_TIMEOUT_SECS", 5.0)
    llm_retries: int = _env("RUNNER_LLM_RETRIES", 1, zero_ok=True)
    llm_fallback_line: str = _env(
        "RUNNER_LLM_FALLBACK_LINE", "Sorry, I had trouble with that. Could you say it again?"
    )
    tts_timeout_secs: float = _env("RUNNER_TTS_TIMEOUT_SECS", 5.0)
    caller_audio_ms: int = _env("RUNNER_CALLER_AUDIO_MS", 40, zero_ok=True)
    provider_metrics: bool = _env("RUNNER_PROVIDER_METRICS", True)
    preload_models: str = _env("RUNNER_PRELOAD_MODELS", "silero,smart-turn")
    log_level: str = _env("RUNNER_LOG_LEVEL", "INFO")
    log_json: bool = _env("RUNNER_LOG_JSON", False)
    tracing: bool = _env("RUNNER_TRACING", False)

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
        """Every key the environment holds, and the API's token, for the redactor."""
        held = [*self.keys.values(), self.api_token]
        return [secret.get_secret_value() for secret in held if secret]

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
        values: dict[str, Any] = {}
        for setting in fields(cls):
            name = setting.metadata.get("env")
            raw = env.get(name) if name else None
            if name and raw:
                values[setting.name] = _parse(name, raw, setting.metadata)
        if any(env.get(name) for name in OTLP_VARIABLES):
            values.setdefault("tracing", True)
        return cls(
            keys={name: SecretStr(env[name]) for name in key_variables() if env.get(name)},
            endpoints={name: env[name] for name in endpoint_variables() if env.get(name)},
            **values,
        )

    @classmethod
    def variables(cls) -> dict[str, Any]:
        """Every ``RUNNER_*``-style variable the runner reads, with its default."""
        return {f.metadata["env"]: f.default for f in fields(cls) if "env" in f.metadata}


def _parse(name: str, raw: str, metadata: Mapping[str, Any]) -> Any:
    kind = metadata["kind"]
    if kind is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name} has value {raw!r}: not a valid bool; use 1/0, true/false")
    if kind is SecretStr:
        if len(raw) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"{name} is {len(raw)} characters long: use at least {MIN_TOKEN_LENGTH}, "
                "e.g. the output of `openssl rand -hex 32`"
            )
        return SecretStr(raw)
    if kind is str:
        return raw
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(
            f"{name} has value {raw!r}: not a valid {kind.__name__}; unset it or give a number"
        ) from None
    if value < 0 or (value == 0 and not metadata["zero_ok"]):
        bound = "zero or more" if metadata["zero_ok"] else "greater than zero"
        raise ConfigError(f"{name} has value {raw!r}: it must be {bound}")
    return value
