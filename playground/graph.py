"""A team's member graph as a Mermaid flowchart: members, their tools, transitions as edges.

There is one node per member entry of the file (``m0``, ``m1``, ... by
position), not per member id: two members given one id are two nodes, and
the second is drawn as the error it is. A transition leads where the runner
would take it, to the first member with its target id, or to a warning node
when no member has that id. The graph is a picture for a designer; whether
the team is valid is ``checks.py``'s to say.
"""

from __future__ import annotations

from playground.teamfile import TeamFile

ERROR_STYLE = "classDef error stroke:#d00,stroke-width:3px,color:#d00"


def mermaid(team_file: TeamFile) -> str:
    """The member graph as a Mermaid flowchart."""
    members = team_file.team.members
    lines = ["flowchart LR"]
    start = team_file.member_index(team_file.team.start_member_id)
    if start is not None:
        lines.append(f"    start(( )) --> m{start}")
    errors: list[str] = []
    for index, member in enumerate(members):
        ai = member.ai
        voice = f"{ai.tts_type or '-'} {ai.tts_voice_id or ''}".strip()
        tools = ", ".join(t.name for t in member.tools) or "no tools"
        parts = [member.name or member.id, ai.engine_model, f"voice: {voice}", tools]
        first = team_file.member_index(member.id)
        if first != index:
            parts.insert(0, f"⚠ duplicate id {member.id!r}, as m{first}: refused")
            errors.append(f"m{index}")
        lines.append(f'    m{index}["{"<br/>".join(_text(p) for p in parts)}"]')
    unknown: dict[str, str] = {}
    for index, member in enumerate(members):
        for transition in member.transitions:
            target_id = transition.next_member_id
            found = team_file.member_index(target_id)
            if found is not None:
                target = f"m{found}"
            elif target_id in unknown:
                target = unknown[target_id]
            else:
                target = unknown[target_id] = f"unknown{len(unknown)}"
                lines.append(f'    {target}["⚠ unknown: {_text(target_id)}"]')
                errors.append(target)
            lines.append(f"    m{index} -- {_text(transition.function_name)} --> {target}")
    if errors:
        lines += [f"    {ERROR_STYLE}", f"    class {','.join(errors)} error"]
    return "\n".join(lines)


def _text(text: str) -> str:
    """``text`` safe inside a Mermaid label: quotes, pipes and angle brackets as entities."""
    for character, entity in (('"', "#quot;"), ("|", "#124;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(character, entity)
    return text
