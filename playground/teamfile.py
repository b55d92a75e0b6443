"""Team files: a team as its designers write it, read strictly and turned into a /run request.

A team file (YAML or JSON) holds what pipecat-manager would resolve from its
database: the members with their AI settings (greetings and goodbyes
included), tools and transitions (with their handoff lines and context
modes), plus the call-level settings (speech providers, turn-taking, idle
nudges) and, optionally, the remote policy service that drives the
conversation (``remote_policy``, as in /run). It may also say what the
simulated caller says, and where it stays silent, for running the team
against the simulators.

``load`` is strict where the runner is lenient: every key must be one the
models declare (``schema.py``), no key may be given twice, and no provider
key may be in it, nor a policy's token (keys are not part of a design). Every such problem is
reported at once, each with its file and line (``source.py``). Whether the
team makes sense is ``checks.py``'s question; drawing it is ``graph.py``'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, PrivateAttr, ValidationError

from playground.schema import unknown_keys
from playground.source import FieldPath, Source
from teamrunner.contract import EndCall, Idle, Message, RemotePolicy, ResolvedTeam, VADConfig


class CallSettings(BaseModel):
    """The call-level fields of /run: speech, turn-taking, history, idle nudges.

    ``end_call`` here stands for the start member's own, as the top level of
    /run does; members say their own in ``team.members[].ai.end_call``.
    """

    stt_type: str | None = None
    stt_language: str | None = None
    tts_type: str | None = None
    tts_language: str | None = None
    tts_voice_id: str | None = None
    vad_config: VADConfig | None = None
    smart_turn_enabled: bool = False
    llm_messages: list[Message] = Field(default_factory=list)
    idle: Idle | None = None
    end_call: EndCall | None = None


class CallerSilence(BaseModel):
    """A stretch of the simulated caller's script where it says nothing at all."""

    silent_secs: float = Field(gt=0, le=120)


class SimulatedTool(BaseModel):
    """What the simulated pipecat-manager answers for a tool."""

    result: dict[str, Any] = Field(default_factory=lambda: {"result": "success"})


class TeamFile(BaseModel):
    """A team file. Unknown keys are refused by ``load``, at every depth, not by the models."""

    name: str = ""
    description: str = ""
    call: CallSettings = Field(default_factory=CallSettings)
    remote_policy: RemotePolicy | None = None
    team: ResolvedTeam
    caller: list[str | CallerSilence] = Field(default_factory=list)
    tool_results: dict[str, SimulatedTool] = Field(default_factory=dict)

    _source: Source = PrivateAttr(default_factory=Source)

    @property
    def source(self) -> Source:
        """Where the file's keys are, for messages (empty for a team built in code)."""
        return self._source

    def member_names(self) -> dict[str, str]:
        """Each member id's display name; the first member of an id is the one that counts."""
        names: dict[str, str] = {}
        for member in self.team.members:
            names.setdefault(member.id, member.name or member.id)
        return names

    def member_index(self, member_id: str) -> int | None:
        """The index of the first member with ``member_id`` (the one the runner uses)."""
        return next((i for i, m in enumerate(self.team.members) if m.id == member_id), None)


class TeamFileError(Exception):
    """A team file that cannot be read or does not have a team file's shape."""


def load(path: str | Path) -> TeamFile:
    """Read a team file (``.yaml``, ``.yml`` or ``.json``).

    Raises:
        TeamFileError: naming the file and every problem with its shape, each with its line.
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
    source = Source.read(str(path), text, labels=_member_labels(data))
    team_file, problems = _validate(data, source)
    if team_file is None or problems:
        problems.sort(key=lambda problem: source.line(problem[0]) or 0)
        count = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
        lines = [source.problem(where, message) for where, message in problems]
        raise TeamFileError(f"{path}: not a team file ({count}):\n" + "\n".join(lines))
    team_file._source = source
    return team_file


def _validate(data: Any, source: Source) -> tuple[TeamFile | None, list[tuple[FieldPath, str]]]:
    """The team file in ``data``, if it has the shape of one, and every problem found."""
    problems = [(k.path, k.message) for k in unknown_keys(TeamFile, data)]
    problems += [(p, "is given twice; YAML keeps only the last one") for p in source.repeated]
    try:
        team_file = TeamFile.model_validate(data)
    except ValidationError as e:
        return None, problems + [(tuple(err["loc"]), err["msg"]) for err in e.errors()]
    problems += [
        (
            ("team", "members", index, "ai", "engine_key"),
            "keys do not belong in a team file: set the provider's key variable "
            "(e.g. OPENAI_API_KEY) where the command runs",
        )
        for index, member in enumerate(team_file.team.members)
        if member.ai.engine_key is not None
    ]
    if team_file.remote_policy is not None and team_file.remote_policy.token is not None:
        problems.append(
            (
                ("remote_policy", "token"),
                "tokens do not belong in a team file: run the policy service without one "
                "for a call by hand (teamrunner demo --policy gives its example service one)",
            )
        )
    return team_file, problems


def _member_labels(data: Any) -> dict[FieldPath, str]:
    """``team.members[N]`` labelled with the member's id, as the file gives it."""
    team = data.get("team") if isinstance(data, dict) else None
    members = team.get("members") if isinstance(team, dict) else None
    if not isinstance(members, list):
        return {}
    return {
        ("team", "members", index): member["id"]
        for index, member in enumerate(members)
        if isinstance(member, dict) and isinstance(member.get("id"), str) and member["id"]
    }


def run_request(
    team_file: TeamFile, call_id: str, policy: RemotePolicy | None = None
) -> dict[str, Any]:
    """The /run body pipecat-manager would send for this team, start member at the top level.

    ``policy`` stands in for the file's ``remote_policy`` (a service started for
    the call, with its address and token).
    """
    start_index = team_file.member_index(team_file.team.start_member_id)
    start = team_file.team.members[start_index or 0]
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
    for name in ("idle", "end_call"):
        value = getattr(call, name)
        if value is not None:
            body[name] = value.model_dump(mode="json", exclude_none=True)
    remote_policy = policy or team_file.remote_policy
    if remote_policy is not None:
        body["remote_policy"] = remote_policy.model_dump(mode="json", exclude={"token"})
        if remote_policy.token is not None:
            body["remote_policy"]["token"] = remote_policy.token.get_secret_value()
    return {k: v for k, v in body.items() if v is not None}
