"""The fields that add the runner's own words are checked like every other: a 4xx naming the field.

An unknown ``context`` mode, a negative ``idle.timeout_secs`` or an empty
``idle.nudges`` do not have the contract's shape (422); words that are blank,
or an ``end_call`` that a Go tool would take over, cannot be served (400).
Answers name the field and never quote the value; every problem is listed
at once; and the OpenAPI schema documents every new field.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from playground.server import RunnerServer

from scenarios import assert_run_refused, team_request, voice_request

SECRET = "value-nobody-should-see-7431"
IDLE = {"timeout_secs": 5, "nudges": ["Are you there?"], "hangup_message": "Goodbye."}


def team_with(change) -> dict[str, Any]:
    body = copy.deepcopy(team_request())
    change(body)
    return body


def members(body: dict[str, Any]) -> list[dict[str, Any]]:
    return body["resolved_team"]["members"]


CASES = [
    (
        "an unknown context mode",
        team_with(lambda b: members(b)[0]["transitions"][0].update(context=SECRET)),
        422,
        "resolved_team.members[0].transitions[0].context",
        "Input should be 'append', 'reset' or 'summary'",
    ),
    (
        "a negative idle timeout",
        voice_request(idle={**IDLE, "timeout_secs": -3}),
        422,
        "idle.timeout_secs",
        "greater than 0",
    ),
    (
        "no idle nudges",
        voice_request(idle={**IDLE, "nudges": []}),
        422,
        "idle.nudges",
        "at least 1 item",
    ),
    (
        "idle nudges sent as null",
        voice_request(idle={**IDLE, "nudges": None}),
        422,
        "idle.nudges",
        "at least 1 item",
    ),
    (
        "an idle without its hang-up line",
        voice_request(idle={k: v for k, v in IDLE.items() if k != "hangup_message"}),
        422,
        "idle.hangup_message",
        "Field required",
    ),
    (
        "an end_call without a goodbye",
        voice_request(end_call={"description": SECRET}),
        422,
        "end_call.goodbye",
        "Field required",
    ),
    (
        "a blank greeting",
        voice_request(greeting="   "),
        400,
        "greeting",
        "greeting: is blank",
    ),
    (
        "a blank nudge",
        voice_request(idle={**IDLE, "nudges": ["Still there?", " \n "]}),
        400,
        "idle.nudges[1]",
        "is blank",
    ),
    (
        "a blank handoff line",
        team_with(lambda b: members(b)[0]["transitions"][0].update(handoff_message="  ")),
        400,
        "resolved_team.members[0].transitions[0].handoff_message",
        "is blank",
    ),
    (
        "a member's blank goodbye",
        team_with(lambda b: members(b)[1]["ai"].update(end_call={"goodbye": " "})),
        400,
        "resolved_team.members[1].ai.end_call.goodbye",
        "is blank",
    ),
    (
        "a single AI's tool named end_call",
        voice_request(end_call={"goodbye": "Bye."}, tools=[{"name": "end_call"}]),
        400,
        "end_call",
        "the same function name as tools[0].name",
    ),
    (
        "a Go tool named end_call in a team that ends calls",
        team_with(
            lambda b: (
                members(b)[1]["ai"].update(end_call={"goodbye": "Bye."}),
                members(b)[2]["tools"].append({"name": "end_call"}),
            )
        ),
        400,
        "resolved_team.members[2].tools[0].name",
        "names the function end_call",
    ),
]


@pytest.mark.parametrize(
    ("body", "status", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_a_bad_value_is_refused_naming_its_field(
    bare_runner: RunnerServer, http: httpx.AsyncClient, body, status, field, words
) -> None:
    await assert_run_refused(bare_runner, http, body, (status, field, words), SECRET)


async def test_every_blank_line_of_a_request_is_reported_at_once(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    def blank_everything(body: dict[str, Any]) -> None:
        body.update(stt_type=None, tts_type=None, idle={**IDLE, "hangup_message": " "})
        members(body)[0]["ai"]["greeting"] = " "
        members(body)[1]["transitions"][0]["handoff_message"] = "\t"

    response = await http.post(f"{bare_runner.url}/run", json=team_with(blank_everything))

    assert response.status_code == 400
    fields = [p["field"] for p in response.json()["problems"]]
    assert fields == [
        "resolved_team.members[0].ai.greeting",
        "resolved_team.members[1].transitions[0].handoff_message",
        "idle.hangup_message",
    ]


async def test_the_openapi_schema_documents_every_new_field(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    schemas = (await http.get(f"{bare_runner.url}/openapi.json")).json()["components"]["schemas"]

    assert {"greeting", "end_call", "idle"} <= set(schemas["RunRequest"]["properties"])
    assert {"greeting", "end_call"} <= set(schemas["ResolvedAI"]["properties"])
    assert {"handoff_message", "context"} <= set(schemas["Transition"]["properties"])
    assert set(schemas["Idle"]["properties"]) == {"timeout_secs", "nudges", "hangup_message"}
    assert set(schemas["EndCall"]["properties"]) == {"description", "goodbye"}
    assert schemas["ContextMode"]["enum"] == ["append", "reset", "summary"]
