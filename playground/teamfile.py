"""Team files: a team as its designers write it, checked, drawn, and turned into a /run request.

A team file (YAML or JSON) holds what pipecat-manager would resolve from its
database: the members with their AI settings, tools and transitions, plus the
call-level settings (speech providers, turn-taking). It may also say what the
simulated caller says, for running the team against the simulators. Keys are
not part of a design; a file that holds one is refused.

``check`` reports two kinds of findings: errors the runner would refuse at
``/run`` (it runs the very same checks) and warnings about the graph that
would not stop a call but probably are mistakes: members no transition
reaches, and members that cannot hand the caller on.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from teamrunner.config import Settings
from teamrunner.contract import Message, ResolvedTeam, RunRequest, VADConfig
from teamrunner.errors import InvalidRequest
from teamrunner.plan import plan_call
from teamrunner.providers import key_variables


class CallSettings(BaseModel):
    """The call-level fields of /run: speech, turn-taking, history."""

    model_config = ConfigDict(extra="forbid")

    stt_type: str | None = None
    stt_language: str | None = None
    tts_type: str | None = None
    tts_language: str | None = None
    tts_voice_id: str | None = None
    vad_config: VADConfig | None = None
    smart_turn_enabled: bool = False
    llm_messages: list[Message] = Field(default_factory=list)


class SimulatedTool(BaseModel):
    """What the simulated pipecat-manager answers for a tool."""

    model_config = ConfigDict(extra="forbid")

    result: dict[str, Any] = Field(default_factory=lambda: {"result": "success"})


class TeamFile(BaseModel):
    """A team file."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    description: str = ""
    call: CallSettings = Field(default_factory=CallSettings)
    team: ResolvedTeam
    caller: list[str] = Field(default_factory=list)
    tool_results: dict[str, SimulatedTool] = Field(default_factory=dict)

    def member_names(self) -> dict[str, str]:
        return {m.id: m.name or m.id for m in self.team.members}


class TeamFileError(Exception):
    """A team file that cannot be read or does not have a team file's shape."""


def load(path: str | Path) -> TeamFile:
    """Read a team file (``.yaml``, ``.yml`` or ``.json``).

    Raises:
        TeamFileError: naming the file and what is wrong with it.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TeamFileError(f"{path}: cannot read it ({e.strerror})") from e
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise TeamFileError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'}: {e}") from e
    try:
        team_file = TeamFile.model_validate(data)
    except ValidationError as e:
        lines = [f"  {_loc(err['loc'])}: {err['msg']}" for err in e.errors()]
        raise TeamFileError(f"{path}: not a team file:\n" + "\n".join(lines)) from e
    for member in team_file.team.members:
        if member.ai.engine_key is not None:
            raise TeamFileError(
                f"{path}: member {member.name or member.id!r} holds an engine_key; keys do not "
                "belong in a team file: set the provider's key variable (e.g. OPENAI_API_KEY)"
            )
    return team_file


def run_request(team_file: TeamFile, call_id: str) -> dict[str, Any]:
    """The /run body pipecat-manager would send for this team, start member at the top level."""
    start = next(m for m in team_file.team.members if m.id == team_file.team.start_member_id)
    call = team_file.call
    body: dict[str, Any] = {
        "id": call_id,
        "llm_type": start.ai.engine_model,
        "llm_messages": [m.model_dump(exclude_none=True) for m in call.llm_messages],
        "stt_type": call.stt_type,
        "stt_language": call.stt_language,
        "tts_type": call.tts_type,
        "tts_language": call.tts_language,
        "tts_voice_id": call.tts_voice_id or start.ai.tts_voice_id,
        "resolved_team": team_file.team.model_dump(mode="json", exclude_none=True),
        "smart_turn_enabled": call.smart_turn_enabled,
    }
    if call.vad_config is not None:
        body["vad_config"] = call.vad_config.model_dump(exclude_none=True)
    return {k: v for k, v in body.items() if v is not None}


@dataclass
class Findings:
    """What ``check`` found: errors stop a call, warnings probably are mistakes."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def check(team_file: TeamFile) -> Findings:
    """Run the runner's own /run checks on the team, and look for graph mistakes."""
    findings = Findings()
    known = {m.id for m in team_file.team.members}
    # A design is checked without keys: every provider is given a stand-in.
    settings = Settings(
        keys={name: SecretStr("design-check-placeholder") for name in key_variables()}
    )
    try:
        plan_call(RunRequest.model_validate(run_request(team_file, "check")), settings)
    except InvalidRequest as e:
        findings.errors += [str(p) for p in e.problems]
    except ValidationError as e:
        findings.errors += [f"{_loc(err['loc'])}: {err['msg']}" for err in e.errors()]
    names = team_file.member_names()
    reachable = _reachable(team_file)
    for member in team_file.team.members:
        label = f"member {names[member.id]!r}"
        if member.id not in reachable:
            findings.warnings.append(f"{label} is unreachable: no transition leads to it")
        targets = [t.next_member_id for t in member.transitions if t.next_member_id in known]
        if not targets:
            findings.warnings.append(
                f"{label} is a dead end: it has no transition, so the call stays with it"
            )
        if member.id in targets:
            findings.warnings.append(f"{label} has a transition to itself")
    return findings


def _reachable(team_file: TeamFile) -> set[str]:
    members = {m.id: m for m in team_file.team.members}
    seen = {team_file.team.start_member_id}
    queue = deque(seen)
    while queue:
        member = members.get(queue.popleft())
        for transition in member.transitions if member else []:
            if transition.next_member_id not in seen:
                seen.add(transition.next_member_id)
                queue.append(transition.next_member_id)
    return seen


def mermaid(team_file: TeamFile) -> str:
    """The member graph as a Mermaid flowchart: members, tools, and transitions as edges."""
    names = team_file.member_names()
    ids = {member_id: f"m{index}" for index, member_id in enumerate(names)}
    lines = ["flowchart LR"]
    start = team_file.team.start_member_id
    if start in ids:
        lines.append(f"    start(( )) --> {ids[start]}")
    for member in team_file.team.members:
        ai = member.ai
        voice = f"{ai.tts_type or '-'} {ai.tts_voice_id or ''}".strip()
        tools = ", ".join(t.name for t in member.tools) or "no tools"
        label = f"{names[member.id]}<br/>{ai.engine_model}<br/>voice: {voice}<br/>{tools}"
        lines.append(f'    {ids[member.id]}["{_mermaid_text(label)}"]')
    for member in team_file.team.members:
        for transition in member.transitions:
            target = ids.get(transition.next_member_id)
            if target is None:
                target = f"missing_{len(lines)}"
                lines.append(
                    f'    {target}["⚠ unknown: {_mermaid_text(transition.next_member_id)}"]'
                )
            lines.append(
                f"    {ids[member.id]} -- {_mermaid_text(transition.function_name)} --> {target}"
            )
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("|", "#124;")


def _loc(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path
