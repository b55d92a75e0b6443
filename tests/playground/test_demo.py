"""The demo: a real team call on one machine, offline, handing the caller to a second voice.

It runs ``teamrunner demo`` as a user would, inside a network
namespace with only loopback (``unshare``), which proves that nothing in it
reaches the network or downloads a model; then reads the transcript and the
WAV it wrote. Besides the members' replies, the caller hears the runner's
own words: the greeter's greeting, its handoff line (with billing's answer
right behind it, no silence between), an idle nudge when the caller goes
quiet once, and billing's goodbye when the caller says goodbye; and the
call's timeline holds every turn, the handoff and the latencies.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import pytest

from simulators.audio import spectral_flatness

from timeline_page import embedded_turns, outside_references

ROOT = Path(__file__).resolve().parents[2]
TEAMRUNNER = Path(sys.executable).with_name("teamrunner")
GREETING = "Hello, this is the Acme front desk. How can I help you today?"
HANDOFF = "Let me put you through to our billing specialist."
NUDGE = "Are you still there?"
GOODBYE = "Thank you for calling Acme. Goodbye!"


def offline(command: list[str]) -> list[str]:
    """``command`` inside a new network namespace whose only interface is loopback."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        pytest.skip("unshare and ip (util-linux, iproute2) are needed to cut the network")
    script = "ip link set lo up && exec " + " ".join(f"'{c}'" for c in command)
    return ["unshare", "--map-root-user", "--net", "sh", "-c", script]


def right_channel(path: Path) -> tuple[bytes, int]:
    with wave.open(str(path)) as wav:
        assert wav.getnchannels() == 2
        frames = wav.readframes(wav.getnframes())
        rate = wav.getframerate()
    samples = memoryview(frames).cast("h")
    return bytes(memoryview(bytearray(samples[1::2].tobytes()))), rate


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def utterances(pcm: bytes, rate: int, gap_secs: float = 0.6) -> list[bytes]:
    """Split bot audio into the stretches of speech separated by at least ``gap_secs``."""
    window = rate // 50 * 2  # 20 ms of s16le
    runs: list[bytearray] = []
    quiet = gap_secs
    for offset in range(0, len(pcm) - window + 1, window):
        chunk = pcm[offset : offset + window]
        loud = max(abs(v) for v in memoryview(chunk).cast("h")) > 300
        if loud and quiet >= gap_secs:
            runs.append(bytearray())
        if runs and (loud or quiet < gap_secs):
            runs[-1] += chunk
        quiet = 0.0 if loud else quiet + 0.02
    return [bytes(r) for r in runs]


def test_demo_runs_offline_and_hands_the_caller_to_a_second_voice(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run(
        offline([str(TEAMRUNNER), "demo", "--out", str(tmp_path)]),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "scripted keyword brain" in result.stdout
    report = json.loads((tmp_path / "demo.json").read_text())
    lines = report["lines"]
    # Whisper heard every word the Piper-voiced caller said (punctuation varies run to run).
    callers = [words(line["text"]) for line in lines if line["kind"] == "caller"]
    assert callers == [
        words("Hi, I have a billing question."),
        words("How much is my bill?"),
        words("Thank you, goodbye."),
    ]
    switches = [line["text"] for line in lines if line["kind"] == "switch"]
    assert switches == ["Greeter -> Billing (transfer_to_billing)"]
    tools = [line["text"] for line in lines if line["kind"] == "tool"]
    assert tools == ["get_latest_bill -> HTTP 200"]
    assert len(report["latencies"]) == 3 and max(report["latencies"]) < 5.0

    # What the caller heard and said, in order; the greeting, the handoff line,
    # the nudge and the goodbye are the runner's own words.
    said = [(line["kind"], line["text"]) for line in lines if line["kind"] in ("bot", "caller")]
    said = [(kind, text if kind == "bot" else " ".join(words(text))) for kind, text in said]
    assert said[:3] == [
        ("bot", GREETING),
        ("caller", "hi i have a billing question"),
        ("bot", HANDOFF),
    ]
    assert said[3] == ("bot", "Hi, this is Billing. How can I help?")
    assert said[4] == ("caller", "how much is my bill")
    assert said[5][0] == "bot" and "invoice 1042" in said[5][1]
    # The caller goes quiet once, and is nudged before they say goodbye.
    assert said[6:] == [
        ("bot", NUDGE),
        ("caller", "thank you goodbye"),
        ("bot", GOODBYE),
    ]
    notes = [line["text"] for line in lines if line["kind"] == "note"]
    assert "the caller stays silent for 9 s" in notes
    bots = [(line["member"], line["detail"]["voice"]) for line in lines if line["kind"] == "bot"]
    assert bots[0] == ("Greeter", "piper")
    assert set(bots[2:]) == {("Billing", "espeak en-us")}

    # The call's timeline: every turn, the handoff with its gap, and the latencies.
    page = (tmp_path / "demo.html").read_text()
    assert outside_references(page) == []
    turns = embedded_turns(page)
    assert [t["opener"] for t in turns] == ["opening", "caller", "caller", "team", "caller"]
    assert [words(t["said"]) for t in turns if t["opener"] == "caller"] == callers
    assert turns[3]["said"] == NUDGE
    assert [t["handoff"] for t in turns if t["handoff"]] == ["Greeter → Billing"]
    assert turns[1]["handoff_gap_ms"] is not None
    v2v = [t["voice_to_voice_ms"] for t in turns if t["opener"] == "caller"]
    assert all(ms is not None and f"voice-to-voice {ms} ms" in page for ms in v2v)

    # The second voice is audibly another voice: Piper's Joe is about 3 times as
    # noise-like as espeak-ng's formant voice (measured 0.0037 against 0.0011).
    bot_audio, rate = right_channel(tmp_path / "demo.wav")
    greeting, handoff, *billing = utterances(bot_audio, rate)
    assert len(billing) == 3  # the bill, the nudge, the goodbye
    for utterance in billing:
        assert spectral_flatness(greeting, rate) > 2 * spectral_flatness(utterance, rate)
    # The handoff line (Piper, about 3 s) and billing's hello (espeak, about
    # 2.4 s) are one stretch of speech, with no pause of 0.6 s between them:
    # no dead air at the handoff.
    assert len(handoff) / (2 * rate) > 4.5
