"""``remote_policy`` in a /run request and in a team file: checked up front, naming the field.

A bad shape is a 422 and a URL the client could not use a 400, both in the
runner's error shape, naming ``remote_policy.<field>`` and quoting none of
its values (the token least of all). A team file takes the same field; its
problems name the file's line, and a token in it is refused like a key.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from playground.checks import check
from playground.server import RunnerServer
from playground.teamfile import TeamFileError, load, run_request
from teamrunner.config import Settings
from teamrunner.contract import RunRequest
from teamrunner.plan import plan_call

from conftest import OPENAI_KEY
from scenarios import voice_request

TOKEN = "policy-bearer-0d7e5a2c9f"
URL = "http://policy.internal:8080/brain"


def text_request(policy: dict[str, Any]) -> dict[str, Any]:
    """A chat session (no speech, so no speech keys needed) with ``policy``."""
    return voice_request(stt_type=None, tts_type=None, tts_voice_id=None, remote_policy=policy)


CASES = [
    ("url not text", {"url": 5}, 422, "remote_policy.url"),
    ("no url", {"config": {}}, 422, "remote_policy.url"),
    ("config not an object", {"url": URL, "config": ["a"]}, 422, "remote_policy.config"),
    ("timeout of 0", {"url": URL, "timeout_secs": 0}, 422, "remote_policy.timeout_secs"),
    ("timeout too long", {"url": URL, "timeout_secs": 31}, 422, "remote_policy.timeout_secs"),
    ("not http", {"url": "ftp://policy.internal/brain"}, 400, "remote_policy.url"),
    ("no host", {"url": "http:///brain"}, 400, "remote_policy.url"),
    ("a query", {"url": f"{URL}?secret-ish=1"}, 400, "remote_policy.url"),
]


@pytest.mark.parametrize(
    ("policy", "status", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_a_bad_remote_policy_is_refused_naming_the_field_and_quoting_nothing(
    bare_runner: RunnerServer,
    http: httpx.AsyncClient,
    policy: dict[str, Any],
    status: int,
    field: str,
) -> None:
    body = text_request({**policy, "token": TOKEN})

    response = await http.post(f"{bare_runner.url}/run", json=body)

    assert response.status_code == status, response.text
    answer = response.json()
    assert answer["status"] == "error"
    assert [p["field"] for p in answer["problems"]] == [field]
    assert TOKEN not in response.text
    if isinstance(policy.get("url"), str):
        assert policy["url"] not in response.text


def test_a_planned_policy_keeps_its_token_secret_and_defaults_its_timeout() -> None:
    body = text_request({"url": f"{URL}/", "token": TOKEN, "config": None})

    plan = plan_call(RunRequest.model_validate(body), Settings())

    assert plan.policy is not None
    assert (plan.policy.url, plan.policy.config, plan.policy.timeout_secs) == (URL, {}, 5.0)
    assert TOKEN in plan.secrets() and OPENAI_KEY in plan.secrets()
    assert TOKEN not in repr(plan)
    assert TOKEN not in repr(RunRequest.model_validate(body))


def test_a_password_in_the_policy_url_is_a_secret_too() -> None:
    body = text_request({"url": "https://brain:hunter2-long-pass@policy.internal"})

    plan = plan_call(RunRequest.model_validate(body), Settings())

    assert "hunter2-long-pass" in plan.secrets()


TEAM = """
name: Reception
remote_policy:
  url: {url}
  config:
    business: Acme
team:
  start_member_id: desk
  members:
    - id: desk
      ai:
        engine_model: openai.gpt-4o
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "team.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def test_a_team_file_names_its_policy_and_the_run_request_carries_it(tmp_path: Path) -> None:
    team = load(write(tmp_path, TEAM.format(url=URL)))

    body = run_request(team, "call-1")

    assert body["remote_policy"] == {"url": URL, "config": {"business": "Acme"}, "timeout_secs": 5}
    findings = check(team)
    assert findings.errors == []
    # A policy can hand the caller to any member, so a lone member is no dead end.
    assert findings.warnings == []


def test_teamrunner_check_names_the_line_of_a_policy_url_it_cannot_use(tmp_path: Path) -> None:
    path = write(tmp_path, TEAM.format(url="ftp://policy.internal"))

    findings = check(load(path))

    [error] = findings.errors
    assert error.startswith(f"{path}:3: remote_policy.url: is not the policy service's base URL")


def test_a_team_file_refuses_a_policy_token_and_a_misspelled_key(tmp_path: Path) -> None:
    text = TEAM.format(url=URL).replace(
        "    business: Acme\n", f"    business: Acme\n  token: {TOKEN}\n  timeout_sec: 3\n"
    )
    path = write(tmp_path, text)

    with pytest.raises(TeamFileError) as refused:
        load(path)

    message = str(refused.value)
    assert f"{path}:6: remote_policy.token: tokens do not belong in a team file" in message
    assert f"{path}:7: remote_policy.timeout_sec: unknown key (did you mean 'timeout_secs'?)" in (
        message
    )
    assert TOKEN not in message
