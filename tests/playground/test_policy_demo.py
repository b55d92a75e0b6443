"""``teamrunner demo --policy``: a receptionist call driven by the example policy service.

It runs the command as a user would (inside a network namespace with only
loopback when ``unshare`` is there to make one): the command starts
``examples/receptionist_policy.py`` with a token, runs the receptionist team
file against the simulators with real speech, and the scripted LLM calls the
policy's tools from the caller's words. The transcript it writes shows the
policy's own lines, in order, and the call ended by the policy with its
disposition.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEAMRUNNER = Path(sys.executable).with_name("teamrunner")


def without_network(command: list[str]) -> list[str]:
    """``command`` in a network namespace with only loopback, where that can be made."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return command
    script = "ip link set lo up && exec " + " ".join(f"'{c}'" for c in command)
    return ["unshare", "--map-root-user", "--net", "sh", "-c", script]


def words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def test_demo_policy_books_an_appointment_through_the_example_service(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run(
        without_network([str(TEAMRUNNER), "demo", "--policy", "--out", str(tmp_path)]),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "remote policy: http://127.0.0.1:" in result.stdout
    report = json.loads((tmp_path / "receptionist.json").read_text())
    said = [
        (line["kind"], line["text"] if line["kind"] == "bot" else words(line["text"]))
        for line in report["lines"]
        if line["kind"] in ("bot", "caller")
    ]
    # The greeting is the team file's; every other bot line is the policy's say,
    # spoken because the scripted model called the policy's tool for the caller's words.
    assert said == [
        ("bot", "Hello, this is Acme Dental. How can I help you?"),
        ("caller", "hi when are you open"),
        ("bot", "We are open Monday to Friday, nine to five."),
        ("caller", "can i have an appointment on tuesday"),
        ("bot", "Sure, booking you for Tuesday. Shall I confirm?"),
        ("caller", "yes please"),
        ("bot", "You are booked for Tuesday. Goodbye!"),
    ], result.stdout
    # The policy ended the call, not the caller hanging up.
    assert (report["ended"], report["disposition"]) == ("policy_ended", "booked")
    assert "the remote policy ended the call: disposition booked" in result.stdout
