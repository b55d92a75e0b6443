"""Team files: read, checked like /run checks them, drawn, and run against the simulators."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from playground.cli import DEMO_TEAM as DEMO
from playground.cli import main
from playground.team_call import run_team
from playground.teamfile import TeamFileError, check, load, mermaid, run_request
from teamrunner.contract import RunRequest


def member(member_id: str, *transitions: tuple[str, str], **ai: str) -> dict:
    return {
        "id": member_id,
        "name": member_id.title(),
        "ai": {"engine_model": "openai.gpt-4o", "init_prompt": f"You are {member_id}.", **ai},
        "transitions": [
            {"function_name": fn, "description": fn, "next_member_id": to} for fn, to in transitions
        ],
    }


def write(tmp_path: Path, data: dict, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data))
    return path


def team(*members: dict, start: str = "front") -> dict:
    return {"name": "Test team", "team": {"start_member_id": start, "members": list(members)}}


def test_the_demo_team_is_clean() -> None:
    findings = check(load(DEMO))

    assert findings.errors == []
    assert findings.warnings == []


def test_graph_mistakes_are_warned_and_unknown_targets_are_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        team(
            member("front", ("transfer_to_sales", "sales"), ("transfer_to_ghost", "ghost")),
            member("sales"),  # a dead end: it cannot hand the caller on
            member("lost", ("transfer_to_front", "front")),  # nothing leads here
        ),
    )

    findings = check(load(path))

    assert findings.errors == [
        "resolved_team.members[0].transitions[1].next_member_id: "
        "is not the id of any member of resolved_team.members"
    ]
    assert findings.warnings == [
        "member 'Sales' is a dead end: it has no transition, so the call stays with it",
        "member 'Lost' is unreachable: no transition leads to it",
    ]
    graph = mermaid(load(path))
    assert "m0 -- transfer_to_sales --> m1" in graph
    assert "⚠ unknown: ghost" in graph
    assert "start(( )) --> m0" in graph


def test_a_key_in_a_team_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, team(member("front", engine_key="sk-should-not-be-here")))

    with pytest.raises(TeamFileError, match="keys do not belong in a team file"):
        load(path)


def test_a_file_that_is_not_a_team_file_names_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, {"team": {"members": []}, "colour": "blue"}, name="team.json")

    with pytest.raises(TeamFileError) as error:
        load(path)

    assert "team.start_member_id: Field required" in str(error.value)
    assert "colour: Extra inputs are not permitted" in str(error.value)


def test_run_request_is_what_pipecat_manager_would_send() -> None:
    body = run_request(load(DEMO), "call-1")

    request = RunRequest.model_validate(body)
    assert request.id == "call-1"
    assert request.llm_type == "openai.scripted-brain"
    assert request.resolved_team is not None
    assert request.resolved_team.start_member_id == "greeter"
    assert request.stt_type == "whisper"
    assert request.vad_config is not None and request.vad_config.stop_secs == 0.3


def test_check_command_prints_the_graph_and_fails_on_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(DEMO)]) == 0
    assert "```mermaid" in capsys.readouterr().out

    broken = write(tmp_path, team(member("front", ("transfer_to_ghost", "ghost"))))
    assert main(["check", str(broken)]) == 1
    assert "error: " in capsys.readouterr().out


async def test_any_team_file_runs_against_the_simulators(tmp_path: Path) -> None:
    voice = {"stt_type": "deepgram", "tts_type": "cartesia"}
    data = team(
        member("front", ("transfer_to_sales", "sales"), tts_voice_id="voice-front", **voice),
        member("sales", ("transfer_to_front", "front"), tts_voice_id="voice-sales", **voice),
    )
    data["call"] = {"stt_type": "deepgram", "tts_type": "cartesia"}
    lines: list[str] = []

    report = await run_team(
        load(write(tmp_path, data)),
        say=["I want to talk to sales.", "Thanks, bye."],
        out_dir=tmp_path / "out",
        echo=lines.append,
    )

    kinds = [(line.kind, line.member) for line in report.lines if line.kind != "note"]
    assert kinds == [
        ("bot", "Front"),
        ("caller", None),
        ("switch", None),
        ("bot", "Sales"),
        ("caller", None),
        ("bot", "Sales"),
    ]
    assert any("Front -> Sales (transfer_to_sales)" in line for line in lines)
    assert Path(report.wav).stat().st_size > 0
    assert json.loads(Path(report.transcript).read_text())["call_id"] == report.call_id
