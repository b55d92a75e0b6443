"""The ``/run`` request exactly as pipecat-manager sends it (docs/contract.md section 1).

These pydantic models describe the shape of the JSON and nothing more: types,
ranges, and which fields may be missing. Go marshals with ``omitempty`` and
sends ``null`` for empty lists, so every field may be absent or null, and
unknown fields are ignored. Whether the request makes sense (a supported
provider, a team whose transitions lead somewhere) is decided in
:mod:`teamrunner.plan`, which turns a request into a call plan.

Keys are ``SecretStr``: printing a request, or an error about one, never shows
them.

The fields that shape what a caller hears beyond the model's replies
(``greeting``, ``end_call``, ``idle``, a transition's ``handoff_message`` and
``context``) are all optional: a request without them is served exactly as
before they existed. So is ``remote_policy``, the team's own service that
drives the conversation between turns (``teamrunner.policy.client``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr


def _none_as_empty_list(value: Any) -> Any:
    return [] if value is None else value


def _none_as_empty_dict(value: Any) -> Any:
    return {} if value is None else value


def _none_as_default(default: Any) -> Any:
    """A validator that reads Go's ``null`` as the field's default."""
    return BeforeValidator(lambda value: default if value is None else value)


# Words the runner says itself. Blank words are refused by the planner
# (``plan/spoken.py``), which can say why; here they only have to be text.
Words = Annotated[str, Field(min_length=1, max_length=2000)]


# A pipecatcall id becomes one path segment of pipecat-manager's URLs, so it
# holds only characters that need no escaping, and no dot (``.`` and ``..``
# would name other paths). Go sends UUIDs; short names such as ``call-1``
# also fit, for tests and calls started by hand.
CallId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")]


class _Incoming(BaseModel):
    """Base for every model of the request: unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)


class FunctionCall(_Incoming):
    name: str = ""
    arguments: str = ""


class ToolCall(_Incoming):
    id: str
    type: str = "function"
    function: FunctionCall = Field(default_factory=FunctionCall)


class Message(_Incoming):
    """One OpenAI-style message of ``llm_messages``."""

    role: str | None = None
    content: str | list[Any] | None = None
    name: str | None = None
    tool_calls: Annotated[list[ToolCall], BeforeValidator(_none_as_empty_list)] = Field(
        default_factory=list
    )
    tool_call_id: str | None = None


class Tool(_Incoming):
    """A tool the LLM may call; pipecat-manager executes it (docs/contract.md section 4)."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: Annotated[dict[str, Any], BeforeValidator(_none_as_empty_dict)] = Field(
        default_factory=dict
    )
    run_llm: bool = False


class VADConfig(_Incoming):
    """Silero VAD parameters; each one left out keeps pipecat's default."""

    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    start_secs: float | None = Field(default=None, ge=0.0, le=10.0)
    stop_secs: float | None = Field(default=None, ge=0.0, le=10.0)
    min_volume: float | None = Field(default=None, ge=0.0, le=1.0)


class EndCall(_Incoming):
    """Offers the model a function ``end_call``; calling it says ``goodbye`` and hangs up."""

    description: str = Field(
        default="End the call once the caller's needs are met and goodbyes have been said.",
        max_length=1000,
    )
    goodbye: Words


class Idle(_Incoming):
    """What the runner does when the caller goes quiet.

    After ``timeout_secs`` of caller silence (not counted while the bot speaks
    or a tool runs) it says ``nudges[0]``, after another ``timeout_secs``
    ``nudges[1]``, and so on; after the last, ``hangup_message``, and the call
    ends. Caller speech starts the nudges over.
    """

    timeout_secs: float = Field(gt=0, le=3600)
    nudges: Annotated[list[Words], BeforeValidator(_none_as_empty_list)] = Field(
        min_length=1, max_length=20
    )
    hangup_message: Words


class ResolvedAI(_Incoming):
    """The AI behind one team member."""

    engine_model: str = ""
    engine_key: SecretStr | None = None
    init_prompt: str | None = None
    parameter: Annotated[dict[str, Any], BeforeValidator(_none_as_empty_dict)] = Field(
        default_factory=dict
    )
    tts_type: str | None = None
    tts_voice_id: str | None = None
    tts_language: str | None = None
    stt_type: str | None = None
    stt_language: str | None = None
    vad_config: VADConfig | None = None
    smart_turn_enabled: bool | None = None
    greeting: Words | None = None
    end_call: EndCall | None = None


class ContextMode(StrEnum):
    """What the next member's LLM sees after a transition."""

    APPEND = "append"  # the whole conversation so far
    RESET = "reset"  # its own prompt and the caller's last turn
    SUMMARY = "summary"  # its own prompt and a short summary of the conversation


class Transition(_Incoming):
    """A function the member's LLM may call to hand the caller to another member."""

    function_name: str = Field(min_length=1)
    description: str = ""
    next_member_id: str = Field(min_length=1)
    handoff_message: Words | None = None
    context: Annotated[ContextMode, _none_as_default(ContextMode.APPEND)] = ContextMode.APPEND


class Member(_Incoming):
    id: str = Field(min_length=1)
    name: str = ""
    ai: ResolvedAI
    tools: Annotated[list[Tool], BeforeValidator(_none_as_empty_list)] = Field(default_factory=list)
    transitions: Annotated[list[Transition], BeforeValidator(_none_as_empty_list)] = Field(
        default_factory=list
    )


class ResolvedTeam(_Incoming):
    id: str = ""
    start_member_id: str = Field(min_length=1)
    members: list[Member] = Field(min_length=1)


# How long one request to a remote policy may take, unless the request says otherwise.
POLICY_TIMEOUT_SECS = 5.0


class RemotePolicy(_Incoming):
    """The team's own policy service, consulted between turns (README, "Remote policy").

    ``url`` is its base: ``/session`` and ``/tool-call`` are posted below it.
    ``config`` is sent to it as ``brain_config``, as given. ``token``, when
    given, is sent as ``Authorization: Bearer <token>`` on every request; it is
    a secret like a provider key. ``timeout_secs`` bounds each request.
    """

    url: str = Field(min_length=1, max_length=2000)
    config: Annotated[dict[str, Any], BeforeValidator(_none_as_empty_dict)] = Field(
        default_factory=dict
    )
    token: SecretStr | None = None
    timeout_secs: Annotated[float, _none_as_default(POLICY_TIMEOUT_SECS), Field(gt=0, le=30)] = (
        POLICY_TIMEOUT_SECS
    )


class RunRequest(_Incoming):
    """The body of ``POST /run``."""

    id: CallId
    llm_type: str | None = None
    llm_key: SecretStr | None = None
    llm_messages: Annotated[list[Message], BeforeValidator(_none_as_empty_list)] = Field(
        default_factory=list
    )
    stt_type: str | None = None
    stt_language: str | None = None
    tts_type: str | None = None
    tts_language: str | None = None
    tts_voice_id: str | None = None
    tools: Annotated[list[Tool], BeforeValidator(_none_as_empty_list)] = Field(default_factory=list)
    resolved_team: ResolvedTeam | None = None
    vad_config: VADConfig | None = None
    smart_turn_enabled: bool = False
    greeting: Words | None = None
    end_call: EndCall | None = None
    idle: Idle | None = None
    remote_policy: RemotePolicy | None = None
