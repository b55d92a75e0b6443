"""A team that cannot work is refused at /run with a 4xx naming the member's field by its path.

Every problem of a request is reported at once. Nothing here reaches a
simulator: the runner refuses before any call starts.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from playground.server import RunnerServer

from scenarios import GREETER, team_request


def team_with(change) -> dict[str, Any]:
    body = copy.deepcopy(team_request())
    change(body["resolved_team"])
    return body


def members(team: dict[str, Any]) -> list[dict[str, Any]]:
    return team["members"]


CASES = [
    (
        "start member unknown",
        lambda t: t.update(start_member_id="nobody"),
        400,
        "resolved_team.start_member_id",
        "is not the id of any member",
    ),
    (
        "two members with one id",
        lambda t: members(t)[2].update(id=GREETER),
        400,
        "resolved_team.members[2].id",
        "is the id of resolved_team.members[0] too",
    ),
    (
        "transition to an unknown member",
        lambda t: members(t)[1]["transitions"][0].update(next_member_id="ghost"),
        400,
        "resolved_team.members[1].transitions[0].next_member_id",
        "next_member_id: is not the id of any member",
    ),
    (
        "a tool and a transition with one name",
        lambda t: members(t)[1]["tools"].append({"name": "transfer_to_greeter"}),
        400,
        "resolved_team.members[1].transitions[0].function_name",
        "the same function name as resolved_team.members[1].tools[1].name",
    ),
    (
        "names that collide once made valid",
        lambda t: members(t)[0]["tools"].append({"name": "transfer to billing"}),
        400,
        "resolved_team.members[0].transitions[0].function_name",
        "the same function name as resolved_team.members[0].tools[1].name",
    ),
    (
        "unsupported LLM provider",
        lambda t: members(t)[1]["ai"].update(engine_model="claude.opus"),
        400,
        "resolved_team.members[1].ai.engine_model",
        "names no LLM provider the runner has; expected <provider>.<model> "
        "with a provider of: gemini, grok, openai",
    ),
    (
        "malformed engine_model",
        lambda t: members(t)[2]["ai"].update(engine_model="gpt4"),
        400,
        "resolved_team.members[2].ai.engine_model",
        "engine_model: is not <provider>.<model>",
    ),
    (
        "unsupported voice provider",
        lambda t: members(t)[1]["ai"].update(tts_type="polly"),
        400,
        "resolved_team.members[1].ai.tts_type",
        "names no TTS provider the runner has; accepted: cartesia, elevenlabs",
    ),
    (
        "unsupported ears",
        lambda t: members(t)[2]["ai"].update(stt_type="gladia"),
        400,
        "resolved_team.members[2].ai.stt_type",
        "names no STT provider the runner has; accepted: deepgram",
    ),
    (
        "no members",
        lambda t: t.update(members=[]),
        422,
        "resolved_team.members",
        "at least 1 item",
    ),
    (
        "a member without its ai",
        lambda t: members(t)[0].pop("ai"),
        422,
        "resolved_team.members[0].ai",
        "Field required",
    ),
    (
        "a transition without a target",
        lambda t: members(t)[0]["transitions"][0].pop("next_member_id"),
        422,
        "resolved_team.members[0].transitions[0].next_member_id",
        "Field required",
    ),
]


@pytest.mark.parametrize(
    ("change", "status", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_invalid_team_is_refused_naming_the_member_and_field(
    bare_runner: RunnerServer, http: httpx.AsyncClient, change, status, field, words
) -> None:
    response = await http.post(f"{bare_runner.url}/run", json=team_with(change))

    assert response.status_code == status, response.text
    answer = response.json()
    assert field in [p["field"] for p in answer["problems"]], answer
    assert words in answer["error"], answer["error"]
    assert len(bare_runner.sessions) == 0
    # The answer names fields; it never quotes the request's values back.
    for value in ("nobody", "ghost", "claude", "gpt4", "polly", "gladia", "transfer to billing"):
        assert value not in response.text


async def test_all_of_a_teams_problems_are_reported_at_once(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    def break_two_members(team: dict[str, Any]) -> None:
        members(team)[0]["ai"]["engine_model"] = "nope.x"
        members(team)[1]["transitions"][0]["next_member_id"] = "ghost"

    body = team_with(break_two_members)
    body.update(stt_type=None, tts_type=None)  # a chat session: no speech keys needed

    response = await http.post(f"{bare_runner.url}/run", json=body)

    assert response.status_code == 400
    fields = [p["field"] for p in response.json()["problems"]]
    assert fields == [
        "resolved_team.members[0].ai.engine_model",
        "resolved_team.members[1].transitions[0].next_member_id",
    ]
    assert "nope" not in response.text and "ghost" not in response.text
