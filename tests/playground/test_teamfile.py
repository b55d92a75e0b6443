"""Team files: read strictly, checked as /run checks them, drawn, and run on the simulators."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from playground.checks import check
from playground.cli import DEMO_TEAM as DEMO
from playground.cli import main
from playground.graph import mermaid
from playground.team_call import run_team
from playground.teamfile import TeamFileError, load, run_request
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
    """``data`` as YAML or JSON, keys in the order given (a member starts at its ``- id:``)."""
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(data, indent=2))
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def write_text(tmp_path: Path, text: str, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def line_of(path: Path, text: str) -> int:
    """The number of the first line of ``path`` that contains ``text``."""
    lines = path.read_text().splitlines()
    return next(number for number, line in enumerate(lines, start=1) if text in line)


def team(*members: dict, start: str = "front") -> dict:
    return {"name": "Test team", "team": {"start_member_id": start, "members": list(members)}}


def problems(error: pytest.ExceptionInfo[TeamFileError]) -> list[str]:
    """The problem lines of a TeamFileError, without its heading."""
    return str(error.value).splitlines()[1:]


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
        f"{path}:{line_of(path, 'next_member_id: ghost')}: "
        "team.members[0] (front).transitions[1].next_member_id: "
        "is not the id of any member of team.members"
    ]
    assert findings.warnings == [
        f"{path}:{line_of(path, '- id: sales')}: member 'Sales' is a dead end: "
        "it has no transition, so the call stays with it",
        f"{path}:{line_of(path, '- id: lost')}: member 'Lost' is unreachable: "
        "no transition leads to it",
    ]
    graph = mermaid(load(path))
    assert "m0 -- transfer_to_sales --> m1" in graph
    assert "⚠ unknown: ghost" in graph
    assert "start(( )) --> m0" in graph


def test_a_key_in_a_team_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, team(member("front", engine_key="sk-should-not-be-here")))

    with pytest.raises(TeamFileError, match="keys do not belong in a team file") as error:
        load(path)

    assert problems(error)[0].startswith(
        f"{path}:{line_of(path, 'engine_key:')}: team.members[0] (front).ai.engine_key: "
    )
    assert "sk-should-not-be-here" not in str(error.value)


def test_a_file_that_is_not_a_team_file_names_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, {"team": {"members": []}, "colour": "blue"}, name="team.json")

    with pytest.raises(TeamFileError) as error:
        load(path)

    assert "team.start_member_id: Field required" in str(error.value)
    assert "colour: unknown key" in str(error.value)


def test_every_misspelled_key_is_an_error_on_its_own_line(tmp_path: Path) -> None:
    path = write_text(
        tmp_path,
        """
        name: Misspelled
        colour: blue
        call:
          stt_tipe: deepgram
        team:
          start_member_id: front
          members:
            - id: front
              nam: Front
              ai:
                engine_model: openai.gpt-4o
                tts_voise_id: voice-front
              tools:
                - name: send_email
                  run_lmm: true
              transitions:
                - function_name: transfer_to_sales
                  next_member: sales
            - id: sales
              ai:
                engine_model: openai.gpt-4o
        tool_results:
          send_email:
            reslt: {}
        """,
    )

    with pytest.raises(TeamFileError) as error:
        load(path)

    heading, *found = str(error.value).splitlines()
    assert heading == f"{path}: not a team file (8 problems):"
    assert [line.split(";")[0] for line in found] == [
        f"{path}:2: colour: unknown key",
        f"{path}:4: call.stt_tipe: unknown key (did you mean 'stt_type'?)",
        f"{path}:9: team.members[0] (front).nam: unknown key (did you mean 'name'?)",
        f"{path}:12: team.members[0] (front).ai.tts_voise_id: unknown key "
        "(did you mean 'tts_voice_id'?)",
        f"{path}:15: team.members[0] (front).tools[0].run_lmm: unknown key "
        "(did you mean 'run_llm'?)",
        # The misspelling leaves a required key missing, too: both are said.
        f"{path}:17: team.members[0] (front).transitions[0].next_member_id: Field required",
        f"{path}:18: team.members[0] (front).transitions[0].next_member: unknown key "
        "(did you mean 'next_member_id'?)",
        f"{path}:24: tool_results.send_email.reslt: unknown key (did you mean 'result'?)",
    ]
    # Each names the keys that are accepted where it stands.
    assert found[2].endswith("the keys here are: id, name, ai, tools, transitions")


def test_a_key_given_twice_is_an_error(tmp_path: Path) -> None:
    path = write_text(
        tmp_path,
        """
        team:
          start_member_id: front
          members:
            - id: front
              ai:
                engine_model: openai.gpt-4o
                engine_model: openai.gpt-4o-mini
        """,
    )

    with pytest.raises(TeamFileError) as error:
        load(path)

    assert problems(error) == [
        f"{path}:7: team.members[0] (front).ai.engine_model: "
        "is given twice; YAML keeps only the last one"
    ]


def test_a_json_team_file_is_as_strict_and_names_lines(tmp_path: Path) -> None:
    data = team(member("front", ("transfer_to_front", "front")))
    data["team"]["members"][0]["ai"]["tts_tipe"] = "cartesia"
    path = write(tmp_path, data, name="team.json")

    with pytest.raises(TeamFileError) as error:
        load(path)

    assert problems(error)[0].startswith(
        f"{path}:{line_of(path, 'tts_tipe')}: team.members[0] (front).ai.tts_tipe: unknown key"
    )


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
    assert f"error: {broken}:" in capsys.readouterr().out


def test_check_command_refuses_a_misspelled_key_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = team(member("front", ("transfer_to_front", "front")))
    data["team"]["members"][0]["nam"] = "Front desk"
    path = write(tmp_path, data)

    assert main(["check", str(path)]) == 2

    err = capsys.readouterr().err
    assert f"{path}:{line_of(path, 'nam: Front desk')}: team.members[0] (front).nam: " in err


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
    assert report.wav is not None and Path(report.wav).stat().st_size > 0
    assert report.transcript is not None
    assert json.loads(Path(report.transcript).read_text())["call_id"] == report.call_id
    assert report.interrupted is False


SPOKEN_TEAM = """
name: Front desk
call:
  idle:
    timeout_secs: 8
    nudges: ["Are you still there?"]
    hangup_message: Goodbye for now.
team:
  start_member_id: front
  members:
    - id: front
      ai:
        engine_model: openai.gpt-4o
        greeting: Hello, {{ company }} here.
        parameter: {company: Acme}
      transitions:
        - function_name: transfer_to_billing
          next_member_id: billing
          handoff_message: One moment, please.
          context: reset
    - id: billing
      ai:
        engine_model: openai.gpt-4o
        end_call: {goodbye: Goodbye!}
      transitions:
        - function_name: transfer_to_front
          next_member_id: front
          context: summary
"""


def test_greetings_handoff_lines_context_idle_and_end_call_reach_the_run_request(
    tmp_path: Path,
) -> None:
    team_file = load(write_text(tmp_path, SPOKEN_TEAM))

    body = run_request(team_file, "call-1")

    assert check(team_file).errors == []
    assert body["idle"] == {
        "timeout_secs": 8.0,
        "nudges": ["Are you still there?"],
        "hangup_message": "Goodbye for now.",
    }
    front, billing = body["resolved_team"]["members"]
    assert front["ai"]["greeting"] == "Hello, {{ company }} here."
    assert front["transitions"][0]["handoff_message"] == "One moment, please."
    assert front["transitions"][0]["context"] == "reset"
    assert billing["ai"]["end_call"]["goodbye"] == "Goodbye!"
    assert billing["transitions"][0]["context"] == "summary"
    assert RunRequest.model_validate(body).idle is not None


def test_bad_values_and_misspelled_keys_of_the_new_fields_are_refused_with_their_lines(
    tmp_path: Path,
) -> None:
    text = (
        SPOKEN_TEAM.replace("timeout_secs: 8", "timeout_secs: -1")
        .replace('nudges: ["Are you still there?"]', "nudges: []")
        .replace("context: reset", "context: sumary")
        .replace("handoff_message:", "handof_message:")
    )
    path = write_text(tmp_path, text)

    with pytest.raises(TeamFileError) as error:
        load(path)

    found = problems(error)
    assert found[0].startswith(
        f"{path}:{line_of(path, 'timeout_secs')}: call.idle.timeout_secs: "
        "Input should be greater than 0"
    )
    assert found[1].startswith(f"{path}:{line_of(path, 'nudges')}: call.idle.nudges: List should")
    assert found[2].startswith(
        f"{path}:{line_of(path, 'handof_message')}: "
        "team.members[0] (front).transitions[0].handof_message: "
        "unknown key (did you mean 'handoff_message'?)"
    )
    assert found[3] == (
        f"{path}:{line_of(path, 'sumary')}: team.members[0] (front).transitions[0].context: "
        "Input should be 'append', 'reset' or 'summary'"
    )


def test_check_refuses_blank_words_naming_the_files_keys_and_lines(tmp_path: Path) -> None:
    text = SPOKEN_TEAM.replace("Hello, {{ company }} here.", '"  "').replace(
        "hangup_message: Goodbye for now.", 'hangup_message: " "'
    )
    path = write_text(tmp_path, text)

    findings = check(load(path))

    assert findings.errors == [
        f"{path}:{line_of(path, 'hangup_message')}: call.idle.hangup_message: "
        "is blank; give the words to say, or leave the field out",
        f"{path}:{line_of(path, 'greeting')}: team.members[0] (front).ai.greeting: "
        "is blank; give the words to say, or leave the field out",
    ]
