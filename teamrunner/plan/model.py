"""The call plan: plain, frozen data saying everything the pipeline builder needs.

A plan holds no pipecat objects and no behaviour beyond a few derived
properties; ``planner.py`` makes one from a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from teamrunner.contract import ContextMode, VADConfig
from teamrunner.providers import LLMSpec, STTSpec, TTSSpec

# The member id of the one AI of a single-AI call.
SINGLE_MEMBER_ID = "single"
# The function a member's LLM calls to end the call (see ``EndCallPlan``).
END_CALL_FUNCTION = "end_call"


@dataclass(frozen=True)
class ToolPlan:
    """A function the LLM may call; pipecat-manager executes it.

    Attributes:
        name: The name the LLM sees (valid for every provider).
        wire_name: The name pipecat-manager knows it by, sent back on ``/tools``.
        description: What the LLM is told it does.
        parameters: Its JSON schema.
        run_llm: Whether the LLM runs again on the result, unless the model says otherwise.
    """

    name: str
    wire_name: str
    description: str
    parameters: dict[str, Any]
    run_llm: bool = False

    @property
    def properties(self) -> dict[str, Any]:
        return self.parameters.get("properties", {})

    @property
    def required(self) -> list[str]:
        return self.parameters.get("required", [])


@dataclass(frozen=True)
class TransitionPlan:
    """A function that hands the caller to another member.

    Attributes:
        handoff_message: Said in the current member's voice as the transition
            is called, while the next member's LLM starts (None: say nothing).
        context: What the next member's LLM sees of the conversation.
    """

    name: str
    wire_name: str
    description: str
    next_member_id: str
    handoff_message: str | None = None
    context: ContextMode = ContextMode.APPEND


@dataclass(frozen=True)
class EndCallPlan:
    """The ``end_call`` function: ``description`` tells the model when, ``goodbye`` is said."""

    description: str
    goodbye: str


@dataclass(frozen=True)
class IdlePlan:
    """Nudging a caller who has gone quiet, then hanging up (see ``contract.Idle``)."""

    timeout_secs: float
    nudges: tuple[str, ...]
    hangup_message: str


@dataclass(frozen=True)
class PolicyPlan:
    """The call's remote policy (see ``contract.RemotePolicy``); its repr never shows the token.

    Attributes:
        url: The service's base URL, without a trailing slash.
        config: Sent as ``brain_config``.
        token: Sent as a bearer token on every request, if any.
        timeout_secs: How long one request may take.
    """

    url: str
    config: dict[str, Any]
    token: str | None = field(default=None, repr=False)
    timeout_secs: float = 5.0

    def secrets(self) -> list[str]:
        """The token, and a password the URL itself carries, if any."""
        password = urlsplit(self.url).password
        return [s for s in (self.token, password) if s]


@dataclass(frozen=True)
class TurnPlan:
    """How the end of the caller's turn is detected (``teamrunner.speech.turn_taking`` acts on it).

    Attributes:
        vad: Silero parameters; None fields keep pipecat's defaults.
        smart_turn: Whether the smart-turn model decides the end of a turn
            (otherwise a fixed silence after the VAD's stop does).
    """

    vad: VADConfig = field(default_factory=VADConfig)
    smart_turn: bool = False


@dataclass(frozen=True)
class MemberPlan:
    """One AI of the call: a team member, or the single AI of a single-AI call.

    ``engine_model``, ``tts_type``, ``tts_voice_id`` and ``stt_type`` are the
    request's own values, which pipecat-manager is told in member-switched.
    ``prompt`` is its LLM's system instruction: a single AI's system messages,
    or a member's ``init_prompt`` (``You are <name>.`` without one); None for
    a single AI without system messages.
    """

    id: str
    name: str
    llm: LLMSpec
    stt: STTSpec | None
    tts: TTSSpec | None
    prompt: str | None
    tools: tuple[ToolPlan, ...]
    transitions: tuple[TransitionPlan, ...] = ()
    turn: TurnPlan | None = None
    engine_model: str = ""
    tts_type: str = ""
    tts_voice_id: str = ""
    stt_type: str = ""
    greeting: str | None = None
    end_call: EndCallPlan | None = None

    @property
    def label(self) -> str:
        return self.name or self.id

    def tool(self, name: str) -> ToolPlan | None:
        """The tool this member's LLM knows as ``name``, or None."""
        return next((t for t in self.tools if t.name == name), None)


@dataclass(frozen=True)
class CallPlan:
    """Everything needed to build one call's pipeline.

    Attributes:
        id: The pipecatcall id.
        members: The AIs of the call, by id (one for a single-AI call).
        start_member_id: Who answers first.
        is_team: Whether transitions between members are possible.
        hears: Whether the call has caller audio (an input socket and STT).
        speaks: Whether replies are spoken (TTS).
        turn: Turn-taking for the call (members may override it).
        messages: The conversation so far, valid for an LLM. When it ends with
            the caller's turn and the start member greets, the greeting is in
            it as the AI's message just before that turn.
        pending_turn: Whether the conversation ends with the caller's turn,
            which the start member answers as it starts (after its greeting).
        team_id: The team's id (empty for a single-AI call).
        idle: What to do when the caller goes quiet (None: nothing).
        policy: The remote policy that drives the conversation (None: none).
    """

    id: str
    members: dict[str, MemberPlan]
    start_member_id: str
    is_team: bool
    hears: bool
    speaks: bool
    turn: TurnPlan
    messages: list[dict[str, Any]]
    team_id: str = ""
    idle: IdlePlan | None = None
    policy: PolicyPlan | None = None
    pending_turn: bool = False

    @property
    def start_member(self) -> MemberPlan:
        return self.members[self.start_member_id]

    @property
    def opens_with_llm(self) -> bool:
        """Whether the start member speaks first by asking its LLM.

        Not when it greets: the greeting is its first turn. And with nothing to
        go on (no prompt, no history, no remote policy) it waits for the
        caller: providers refuse an empty context.
        """
        start = self.start_member
        return not start.greeting and bool(start.prompt or self.messages or self.policy)

    def secrets(self) -> list[str]:
        """Every key the call uses, for the redactor."""
        keys = {
            spec.key
            for member in self.members.values()
            for spec in (member.llm, member.stt, member.tts)
            if spec is not None and spec.key
        }
        if self.policy is not None:
            keys.update(self.policy.secrets())
        return sorted(keys)
