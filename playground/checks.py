"""Checking a team file: the runner's own /run checks, and warnings about its graph.

``check`` reports two kinds of findings. Errors are what the runner would
refuse at ``/run``: it runs the very same checks on the request the file
becomes. The runner names fields by their path in that request
(``resolved_team.members[1].ai.tts_type``, ``stt_language``); each is mapped
back to the file's own keys (``team.members[1] (billing).ai.tts_type``,
``call.stt_language``) and line. Warnings are about the graph, and would not
stop a call but probably are mistakes: members no transition reaches, and
members that cannot hand the caller on. A team with a ``remote_policy`` gets
neither: its policy can hand the caller to any member, by the member's id,
whatever the transitions say.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from pydantic import SecretStr, ValidationError

from playground.source import FieldPath
from playground.teamfile import CallSettings, TeamFile, run_request
from teamrunner.config import Settings
from teamrunner.contract import Member, RunRequest
from teamrunner.errors import InvalidRequest
from teamrunner.plan import plan_call
from teamrunner.providers import key_variables

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_REQUEST_TEAM = re.compile(r"\bresolved_team\.")


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
    findings = Findings(errors=_runner_problems(team_file))
    source = team_file.source
    members = team_file.team.members
    known = {m.id for m in members}
    reachable = _reachable(team_file)
    steered = team_file.remote_policy is not None
    for index, member in enumerate(members):
        if team_file.member_index(member.id) != index:
            continue  # a second member of an id: the runner refuses it, an error says so
        at = source.at(("team", "members", index))
        label = f"{at + ': ' if at else ''}member {member.name or member.id!r}"
        if member.id not in reachable and not steered:
            findings.warnings.append(f"{label} is unreachable: no transition leads to it")
        targets = [t.next_member_id for t in member.transitions if t.next_member_id in known]
        if not targets and not steered:
            findings.warnings.append(
                f"{label} is a dead end: it has no transition, so the call stays with it"
            )
        if member.id in targets:
            findings.warnings.append(f"{label} has a transition to itself")
    return findings


def _runner_problems(team_file: TeamFile) -> list[str]:
    """What the runner's /run checks say of the team, in the file's keys and lines."""
    # A design is checked without keys: every provider is given a stand-in.
    settings = Settings(
        keys={name: SecretStr("design-check-placeholder") for name in key_variables()}
    )
    source = team_file.source
    try:
        plan_call(RunRequest.model_validate(run_request(team_file, "check")), settings)
    except InvalidRequest as e:
        problems = [(request_path(p.field), p.message) for p in e.problems]
    except ValidationError as e:
        problems = [(tuple(err["loc"]), err["msg"]) for err in e.errors()]
    else:
        return []
    in_file = [(file_path(where, team_file), message) for where, message in problems]
    in_file.sort(key=lambda problem: source.line(problem[0]) or 0)
    return [source.problem(where, _REQUEST_TEAM.sub("team.", msg)) for where, msg in in_file]


def request_path(field_path: str) -> FieldPath:
    """A runner's field path as parts: ``a.b[2].c`` is ``("a", "b", 2, "c")``."""
    return tuple(int(index) if index else name for name, index in _PATH_PART.findall(field_path))


def file_path(request: FieldPath, team_file: TeamFile) -> FieldPath:
    """Where in the team file the value at ``request`` (a path in its /run body) comes from."""
    if not request:
        return request
    head, rest = request[0], request[1:]
    if head == "resolved_team":
        return ("team", *rest)
    if head == "llm_type":  # the start member's model, as Go fills the top level
        start = team_file.member_index(team_file.team.start_member_id)
        if start is None:
            return ("team", "start_member_id")
        return ("team", "members", start, "ai", "engine_model")
    if head in CallSettings.model_fields:
        return ("call", *request)
    return request


def _reachable(team_file: TeamFile) -> set[str]:
    members: dict[str, Member] = {}
    for member in team_file.team.members:
        members.setdefault(member.id, member)
    seen = {team_file.team.start_member_id}
    queue = deque(seen)
    while queue:
        found = members.get(queue.popleft())
        for transition in found.transitions if found else []:
            if transition.next_member_id not in seen:
                seen.add(transition.next_member_id)
                queue.append(transition.next_member_id)
    return seen
