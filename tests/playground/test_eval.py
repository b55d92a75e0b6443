"""``teamrunner eval`` and ``eval-bot``: pipecat's own eval harness against a team's real call.

The commands run as a user runs them, each a process of its own, with no
provider keys: the team's LLMs are the scripted stand-in, its Go tools the
pipecat-manager simulator, and pipecat's eval client (``pipecat eval run``)
plays the caller, in text or by voice, and checks the team's events. The scenarios shipped
in ``playground/scenarios`` must pass; one with a wrong expectation must fail
with exit 1 and say which expectation failed. Each scenario's call is drawn as a
timeline beside pipecat's log of it, and each of ``eval-bot``'s calls too.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulators.openai import ChatRequest, OpenAISimulator, Reply

from timeline_page import embedded_turns, outside_references

ROOT = Path(__file__).resolve().parents[2]
TEAMRUNNER = Path(sys.executable).with_name("teamrunner")
PIPECAT = Path(sys.executable).with_name("pipecat")
SCENARIOS = ROOT / "playground" / "scenarios"
TEAMS = ROOT / "playground" / "teams"

# Each shipped scenario file, the team it is for, and what that team needs to run.
SHIPPED = {
    "demo.yaml": ("demo.yaml", []),
    "demo_voice.yaml": ("demo.yaml", []),
    "receptionist.yaml": ("receptionist.yaml", ["--example-policy"]),
}

WRONG_HANDOFF = """\
name: wrong
scenarios:
  - name: hands_billing_to_sales
    turns:
      - expect:
          - event: response
            text_contains: Acme front desk
      - user: Hi, I have a billing question.
        expect:
          - event: function_call
            within_ms: 3000
            calls:
              - name: transfer_to_sales
"""


JUDGED_BY_THE_TEAMS_KEY = """\
name: keyed
judge:
  eval:
    factory: playground.eval_services.openai
    model: judge-model
scenarios:
  - name: the_team_s_own_model_answers
    turns:
      - expect:
          - event: response
            text_contains: Acme front desk
      - user: What are your opening hours?
        expect:
          - event: response
            text_contains: the team's own model
            eval: answers the caller's question
"""

# A key of the form a provider's has: the runner treats it as a secret.
OPENAI_KEY = "sk-eval-test-5f0c2a9e71"


def keyless_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def teamrunner(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TEAMRUNNER), *args],
        cwd=cwd,
        env=keyless_environment(),
        capture_output=True,
        text=True,
        timeout=150,
    )


def test_every_shipped_scenario_file_names_its_team() -> None:
    assert sorted(p.name for p in SCENARIOS.glob("*.yaml")) == sorted(SHIPPED)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("scenario", sorted(SHIPPED))
def test_the_shipped_scenarios_pass_against_their_team(scenario: str, tmp_path: Path) -> None:
    team, options = SHIPPED[scenario]
    result = teamrunner(
        "eval",
        str(TEAMS / team),
        str(SCENARIOS / scenario),
        *options,
        "--out",
        str(tmp_path),
        cwd=tmp_path,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    passed = re.search(r"(\d+)/(\d+) passed", result.stdout)
    assert passed is not None and passed.group(1) == passed.group(2), result.stdout
    assert "scripted keyword brain" in result.stdout  # no keys: the stand-in, and it says so
    assert "failed" not in result.stdout
    assert list(tmp_path.glob("*.eval.log"))  # pipecat eval's logs went to --out


@pytest.mark.timeout(180)
def test_eval_draws_each_scenarios_call_as_a_timeline_beside_its_log(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = teamrunner(
        "eval",
        str(TEAMS / "demo.yaml"),
        str(SCENARIOS / "demo.yaml"),
        "--out",
        str(out),
        cwd=tmp_path,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    pages = {}
    for scenario in ("billing_handoff", "greeter_keeps_other_questions"):
        # Named as pipecat names the scenario's log, and said where after the report.
        page = out / f"demo__{scenario}.html"
        assert (out / f"demo__{scenario}.eval.log").exists()
        assert f"wrote {page} (the call's timeline: open it in a browser)" in result.stdout
        pages[scenario] = page.read_text()
        assert outside_references(pages[scenario]) == []
    # Whisker was not asked for: nothing of it.
    assert "Whisker" not in result.stdout
    assert not list(out.glob("*.whisk"))

    # The billing scenario: the greeting, then a turn per message the harness typed.
    turns = embedded_turns(pages["billing_handoff"])
    assert turns[0]["opener"] == "opening"
    assert turns[0]["said"] == "Hello, this is the Acme front desk. How can I help you today?"
    assert [t["said"] for t in turns if t["opener"] == "caller"] == [
        "Hi, I have a billing question.",
        "How much is my bill?",
        "Thank you, goodbye.",
    ]
    # The handoff in the turn that asked for billing, with its function and its line.
    [handoff] = [t for t in turns if t["handoff"]]
    assert handoff["said"] == "Hi, I have a billing question."
    assert handoff["handoff"] == "Greeter → Billing"
    steps = [s["what"] for s in handoff["steps"]]
    assert "handoff Greeter → Billing (transfer_to_billing)" in steps
    assert "handoff line “Let me put you through to our billing specialist.”" in steps
    assert "get_latest_bill() returned" in [s["what"] for s in turns[2]["steps"]]
    # The other scenario's call is its own: the greeter keeps it.
    others = embedded_turns(pages["greeter_keeps_other_questions"])
    assert [t["said"] for t in others if t["opener"] == "caller"] == [
        "What are your opening hours?"
    ]
    assert not any(t["handoff"] for t in others)


@pytest.mark.timeout(180)
def test_a_wrong_expectation_fails_with_exit_1_and_names_the_expectation(tmp_path: Path) -> None:
    scenario = tmp_path / "wrong.yaml"
    scenario.write_text(WRONG_HANDOFF)

    result = teamrunner(
        "eval", str(TEAMS / "demo.yaml"), str(scenario), "--out", str(tmp_path), cwd=tmp_path
    )

    assert result.returncode == 1, result.stdout + result.stderr
    assert "0/1 passed" in result.stdout
    # pipecat's report names the turn, the event and the function that was not called.
    failure = re.search(r"turn 1 function_call .*", result.stdout)
    assert failure is not None, result.stdout
    assert "transfer_to_sales" in failure.group(0)


def test_a_team_the_runner_would_refuse_stops_eval_before_any_scenario_runs(
    tmp_path: Path,
) -> None:
    # Real providers (a key is set), and the members' LLM is one whose key is not.
    team = tmp_path / "grok.yaml"
    team.write_text((TEAMS / "demo.yaml").read_text().replace("openai.scripted-brain", "grok.x"))

    result = subprocess.run(
        [str(TEAMRUNNER), "eval", str(team), str(SCENARIOS / "demo.yaml"), "--out", str(tmp_path)],
        cwd=tmp_path,
        env={**keyless_environment(), "OPENAI_API_KEY": OPENAI_KEY},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 1
    assert "/run for this team would be refused" in result.stderr
    assert "XAI_API_KEY" in result.stderr
    assert "passed" not in result.stdout  # pipecat eval never started


@pytest.mark.timeout(180)
def test_eval_bot_serves_the_team_to_pipecats_own_eval_command(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bot = subprocess.Popen(
        [str(TEAMRUNNER), "eval-bot", str(TEAMS / "demo.yaml"), "--port", "0", "--out", str(out)],
        cwd=tmp_path,
        env=keyless_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert bot.stdout is not None
        url = None
        for line in bot.stdout:  # it prints where it serves once it does
            if found := re.search(r"--bot-url (ws://\S+)", line):
                url = found.group(1)
                break
        assert url is not None, "eval-bot never said where it serves"
        harness = subprocess.run(
            [
                str(PIPECAT),
                "eval",
                "run",
                str(SCENARIOS / "demo.yaml"),
                "--bot-url",
                url,
                "--logs-dir",
                str(tmp_path),
            ],
            cwd=tmp_path,
            env=keyless_environment(),
            capture_output=True,
            text=True,
            timeout=150,
        )
    finally:
        bot.terminate()
        stopped = bot.wait(timeout=30)
    printed = bot.stdout.read()

    assert harness.returncode == 0, harness.stdout + harness.stderr
    assert re.search(r"(\d+)/\1 passed", harness.stdout), harness.stdout
    assert stopped == 0  # SIGTERM stops it cleanly, like Ctrl-C
    # Each of the harness's calls (a scenario each) drawn, numbered, and said where.
    for call in ("call-01", "call-02"):
        page = out / f"{call}.html"
        assert f"wrote {page} (the call's timeline: open it in a browser)" in printed
        assert embedded_turns(page.read_text())[0]["opener"] == "opening"


def as_the_model_or_the_judge(request: ChatRequest) -> Reply:
    """The team's model says who it is; pipecat's judge (a classifier) is told yes."""
    if "You are a classifier" in (request.system_prompt or ""):
        return Reply.say(json.dumps({"verdict": {"choice": "yes", "probabilities": {"yes": 1}}}))
    return Reply.say("This is the team's own model. We open at nine.")


@pytest.mark.timeout(180)
async def test_with_a_provider_key_the_team_s_own_model_answers_and_its_judge_judges(
    tmp_path: Path,
) -> None:
    scenario = tmp_path / "keyed.yaml"
    scenario.write_text(JUDGED_BY_THE_TEAMS_KEY)
    async with OpenAISimulator(responder=as_the_model_or_the_judge) as openai:
        environ = {
            **keyless_environment(),
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": openai.base_url,
        }
        command = [str(TEAMRUNNER), "eval", str(TEAMS / "demo.yaml"), str(scenario)]
        process = await asyncio.create_subprocess_exec(
            *command,
            "--out",
            str(tmp_path),
            cwd=tmp_path,
            env=environ,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), 150)

    text = output.decode()
    assert process.returncode == 0, text
    assert "the team's own providers (OPENAI_API_KEY set)" in text
    # The greeter's prompt went to the provider the environment names, with its key,
    # and so did the judge's question about the reply.
    authorized = [r for r in openai.requests if r.authorization == f"Bearer {OPENAI_KEY}"]
    assert any("greeter of Acme" in (r.system_prompt or "") for r in authorized)
    judged = [r for r in authorized if "You are a classifier" in (r.system_prompt or "")]
    assert judged and all(r.model == "judge-model" for r in judged)
