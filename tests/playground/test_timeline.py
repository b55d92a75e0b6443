"""The call's HTML timeline: every turn, the handoff and the latencies; nothing fetched.

``teamrunner call`` runs a short team (``short_call.py``) as a user would and
writes ``out/short.html`` beside the transcript. The test reads the turns the
page embeds as JSON and the text a designer sees, against the transcript the
same call wrote from pipecat-manager's side of the wire.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from short_call import HANDOFF_LINE, TEAMRUNNER, Command, environment, team_file
from timeline_page import embedded_turns, outside_references


def _step(what: str) -> str:
    """A step's kind: ``LLM request (Front)`` is an ``LLM request``."""
    return what.split(" (")[0].split(" “")[0]


@pytest.mark.timeout(240)
def test_the_call_timeline_holds_every_turn_the_handoff_and_the_latencies(tmp_path: Path) -> None:
    command = Command(
        [str(TEAMRUNNER), "call", str(team_file(tmp_path)), "--out", str(tmp_path / "out")],
        tmp_path,
        environment(),
    )
    try:
        status = command.finish(timeout=200)
    finally:
        command.kill()
    assert status == 0, f"{command.lines} {command.errors()}"
    html = tmp_path / "out" / "short.html"
    assert f"wrote {html} (the call's timeline: open it in a browser)" in command.lines
    page = html.read_text()
    report = json.loads((tmp_path / "out" / "short.json").read_text())
    turns = embedded_turns(page)

    # Every turn: the opening greeting, then one per caller turn as the transcript has them.
    assert turns[0]["opener"] == "opening" and turns[0]["said"] == "Hello, front desk here."
    caller_turns = [t for t in turns if t["opener"] == "caller"]
    heard = [line["text"] for line in report["lines"] if line["kind"] == "caller"]
    assert [t["said"] for t in caller_turns] == heard
    assert len(heard) >= 2  # the caller's lines, however the runner joined them into turns
    for turn in caller_turns:
        assert f"“{turn['said']}”" in page

    # The handoff, its line, and the gap after the line, in the turn that asked for billing.
    handoff = next(t for t in turns if t["handoff"])
    assert handoff["handoff"] == "Front → Billing"
    assert "billing question" in handoff["said"]
    steps = [s["what"] for s in handoff["steps"]]
    assert f"handoff line “{HANDOFF_LINE}”" in steps
    assert "handoff Front → Billing (transfer_to_billing)" in steps
    assert "the caller hears Front" in steps and "the caller hears Billing" in steps
    assert steps.index("the caller hears Front") < steps.index("the caller hears Billing")
    # Heard for as long as it lasts: the Cartesia stand-in speaks 40 ms a character.
    line = next(h for h in handoff["heard"] if h["what"] == f"Front: {HANDOFF_LINE}")
    assert line["end"] - line["start"] == pytest.approx(len(HANDOFF_LINE) * 0.040, abs=0.1)
    gap = handoff["handoff_gap_ms"]
    assert gap is not None and 0 <= gap < 1000
    assert f"handoff gap {gap} ms" in page

    # Each caller turn's steps, each with its latency, and its voice-to-voice time marked.
    for turn in caller_turns:
        latencies = {_step(s["what"]): s["latency_ms"] for s in turn["steps"]}
        for step in ("end of turn", "transcript", "LLM request", "LLM end", "TTS first audio"):
            assert isinstance(latencies.get(step), int), (step, turn["steps"])
        v2v = turn["voice_to_voice_ms"]
        assert v2v is not None and 100 < v2v < 5000
        assert f"voice-to-voice {v2v} ms" in page
        # Where it went, stage by stage, from the VAD's wait to the playout.
        stages = [s["stage"] for s in turn["breakdown"]]
        assert stages[0] == "VAD stop wait" and stages[-1] == "playout"
        assert sum(s["ms"] for s in turn["breakdown"]) == pytest.approx(v2v, abs=len(stages))
    # The LLM's first byte (of a spoken reply) and the tool's round trip.
    all_steps = [s for t in caller_turns for s in t["steps"]]
    assert any(s["what"].startswith("LLM first byte") and s["latency_ms"] >= 0 for s in all_steps)
    tool = next(s for s in all_steps if s["what"] == "get_latest_bill() returned")
    assert tool["latency_ms"] >= 0
    shown = 'get_latest_bill({}) → {"status": "ok", "data": {"invoice": "1042"'
    assert shown in page.replace("&quot;", '"')

    # Self-contained: it loads nothing from anywhere.
    assert outside_references(page) == []
    assert "<svg" in page and "<style>" in page
