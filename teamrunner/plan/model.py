"""The call plan: plain, frozen data saying everything the pipeline builder needs.

A plan holds no pipecat objects and no behaviour beyond a few derived
properties; ``planner.py`` makes one from a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from teamrunner.contract import VADConfig
from teamrunner.providers import LLMSpec, STTSpec, TTSSpec

# The member id of the one AI of a single-AI call.
SINGLE_MEMBER_ID = "single"


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
    """A function that hands the caller to another member."""

    name: str
    wire_name: str
    description: str
    next_member_id: str


@dataclass(frozen=True)
class TurnPlan:
    """How the end of the caller's turn is detected.

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
        messages: The conversation so far, valid for an LLM.
        team_id: The team's id (empty for a single-AI call).
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

    @property
    def start_member(self) -> MemberPlan:
        return self.members[self.start_member_id]

    def secrets(self) -> list[str]:
        """Every key the call uses, for the redactor."""
        keys = {
            spec.key
            for member in self.members.values()
            for spec in (member.llm, member.stt, member.tts)
            if spec is not None and spec.key
        }
        return sorted(keys)
