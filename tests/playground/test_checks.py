"""``check``: the runner's /run problems, told in the team file's own keys and lines."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from playground.checks import check, file_path, request_path
from playground.cli import DEMO_TEAM
from playground.teamfile import load

from runner_process import without_modules

# Line numbers are the file's: line 1 is "name: Front desk".
TEAM = """
name: Front desk
call:
  stt_type: deepgram
  stt_language: klingon
  tts_type: cartesia
team:
  start_member_id: billing
  members:
    - id: front
      ai:
        engine_model: openai.gpt-4o
      transitions:
        - function_name: transfer_to_billing
          next_member_id: billing
    - id: billing
      ai:
        engine_model: openai.gpt-4o
        tts_type: cartesian
      transitions:
        - function_name: transfer_to_front
          next_member_id: front
    - id: billing
      ai:
        engine_model: mistral.large
"""


def write(tmp_path: Path, text: str, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def test_runner_problems_name_the_files_keys_member_ids_and_lines(tmp_path: Path) -> None:
    path = write(tmp_path, TEAM)

    findings = check(load(path))

    assert findings.errors == [
        f"{path}:4: call.stt_language: is not a language code pipecat knows (e.g. en, en-US, de)",
        f"{path}:18: team.members[1] (billing).ai.tts_type: names no TTS provider the runner "
        "has; accepted: cartesia, elevenlabs, espeak, piper",
        f"{path}:22: team.members[2] (billing).id: is the id of team.members[1] too; "
        "member ids must be unique",
        f"{path}:24: team.members[2] (billing).ai.engine_model: names no LLM provider the runner "
        "has; expected <provider>.<model> with a provider of: gemini, grok, openai "
        "(e.g. openai.gpt-4o)",
    ]
    assert not any("resolved_team" in error for error in findings.errors)


def test_graph_warnings_name_the_members_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        team:
          start_member_id: front
          members:
            - id: front
              ai: {engine_model: openai.gpt-4o}
              transitions:
                - {function_name: stay, next_member_id: front}
            - id: lost
              name: Lost
              ai: {engine_model: openai.gpt-4o}
        """,
    )

    findings = check(load(path))

    assert findings.errors == []
    assert findings.warnings == [
        f"{path}:4: member 'front' has a transition to itself",
        f"{path}:8: member 'Lost' is unreachable: no transition leads to it",
        f"{path}:8: member 'Lost' is a dead end: it has no transition, so the call stays with it",
    ]


def test_request_fields_map_back_to_where_the_file_gives_them(tmp_path: Path) -> None:
    team = load(write(tmp_path, TEAM))

    def where(field: str) -> tuple[str | int, ...]:
        return file_path(request_path(field), team)

    assert request_path("resolved_team.members[12].tools[0].name") == (
        "resolved_team",
        "members",
        12,
        "tools",
        0,
        "name",
    )
    assert where("resolved_team.members[1].ai.tts_type") == ("team", "members", 1, "ai", "tts_type")
    assert where("resolved_team.start_member_id") == ("team", "start_member_id")
    assert where("vad_config.stop_secs") == ("call", "vad_config", "stop_secs")
    assert where("tts_language") == ("call", "tts_language")
    # Go fills llm_type from the start member (here the first "billing", members[1]).
    assert where("llm_type") == ("team", "members", 1, "ai", "engine_model")


def test_a_json_team_file_is_checked_with_lines_too(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "team": {
            "start_member_id": "front",
            "members": [
              {
                "id": "front",
                "ai": {"engine_model": "openai.gpt-4o", "stt_language": "klingon"}
              }
            ]
          }
        }
        """,
        name="team.json",
    )

    findings = check(load(path))

    assert findings.errors == [
        f"{path}:7: team.members[0] (front).ai.stt_language: "
        "is not a language code pipecat knows (e.g. en, en-US, de)"
    ]


def test_an_unknown_start_member_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        team:
          start_member_id: nobody
          members:
            - id: front
              ai: {engine_model: openai.gpt-4o}
        """,
    )

    findings = check(load(path))

    assert findings.errors == [
        f"{path}:2: team.start_member_id: is not the id of any member of team.members"
    ]


def test_check_says_in_one_line_that_this_install_cannot_serve_a_voice(tmp_path: Path) -> None:
    # The packaged demo team in an install without Piper (as without the [local] extra).
    teamrunner = Path(sys.executable).parent / "teamrunner"
    result = subprocess.run(
        [str(teamrunner), "check", str(DEMO_TEAM)],
        env={**os.environ, **without_modules(tmp_path, "piper")},
        capture_output=True,
        text=True,
        timeout=60,
    )

    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output
    [error] = [line for line in output.splitlines() if line.startswith("error:")]
    assert f"{DEMO_TEAM}:" in error
    assert "team.members[0] (greeter).ai.tts_type: piper is not installed here" in error
    assert error.endswith("install it with: pip install 'pipecat-team-runner[local]'")
