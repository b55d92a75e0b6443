"""``teamrunner talk`` in a real browser: Debian's Chromium, headless, with a fake microphone.

The talk server runs the demo team on the embedded default (Whisper, Piper,
espeak, the scripted stand-in LLM). Chromium opens the prebuilt client it
serves, presses connect, and plays a WAV as its microphone: a few seconds of
silence while the greeting plays, then the caller's line spoken by Piper,
then silence. Playwright drives the page; the assertions read what the page
shows (the conversation, each line with its member; how much of the bot's
voice its peer connection received), what the team's call recorded, and the
call's timeline the talk server wrote once the call ended.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from playground import teamfile
from playground.cli import DEMO_TEAM
from playground.talk import Talk
from simulators.speech import speak
from simulators.wav import PHONE_RATE, write_wav

from timeline_page import embedded_turns, outside_references

CHROMIUM = Path("/usr/bin/chromium")
TEAMRUNNER = Path(sys.executable).with_name("teamrunner")
GREETING = "Hello, this is the Acme front desk. How can I help you today?"
CALLER = "Hi, I have a billing question."
HANDOFF = "Let me put you through to our billing specialist."
BILLING = "Hi, this is Billing. How can I help?"
# Enough for the greeting to be said before the caller speaks, on a loaded machine too.
LEAD_SECS = 7.0
# Everything here waits on events; this bounds each wait on a loaded 2-core machine.
WAIT_MS = 60_000

pytestmark = pytest.mark.timeout(240)


def silence(secs: float) -> bytes:
    return b"\0\0" * int(PHONE_RATE * secs)


@pytest.fixture
def microphone(tmp_path: Path) -> Path:
    """What the fake microphone plays once: silence, the caller's line, silence."""
    path = tmp_path / "caller.wav"
    write_wav(path, silence(LEAD_SECS) + speak(CALLER) + silence(30), PHONE_RATE)
    return path


@pytest.fixture
async def talk(tmp_path: Path) -> AsyncIterator[Talk]:
    printed: list[str] = []
    team = teamfile.load(DEMO_TEAM)
    async with Talk(team, echo=printed.append, environ={}, out=tmp_path / "out") as server:
        yield server


async def test_the_browser_hears_the_greeting_and_the_team_hears_the_caller_and_answers(
    talk: Talk, microphone: Path, tmp_path: Path
) -> None:
    """And once the call is over, its timeline is written: the greeting, the caller, the handoff."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is needed (apt-get install chromium)")
    playwright_api = pytest.importorskip("playwright.async_api")
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=[
                "--use-fake-device-for-media-stream",
                "--use-fake-ui-for-media-stream",
                f"--use-file-for-fake-audio-capture={microphone}%noloop",
                "--autoplay-policy=no-user-gesture-required",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.pages[0] if browser.pages else await browser.new_page()
            outside: list[str] = []
            page.on(
                "request",
                lambda r: outside.append(r.url) if not r.url.startswith(talk.url) else None,
            )
            await page.goto(talk.url)
            await page.get_by_role("button", name="Connect").click()
            # The team heard the caller (Whisper, on the browser's microphone) and
            # answered: the greeter handed the call to billing, who spoke.
            await page.get_by_text(BILLING).wait_for(timeout=WAIT_MS)
            # The greeting reached the browser as sound, not only as text.
            await page.wait_for_function(
                "Number(document.body.dataset.botAudioBytes || 0) > 5000", timeout=WAIT_MS
            )
            lines = [
                (await line.locator(".who").inner_text(), await line.locator(".words").inner_text())
                for line in await page.locator(".line").all()
            ]
            notes = await page.locator(".note").all_inner_texts()
            # Hanging up in the page ends the team's call.
            await page.get_by_role("button", name="Disconnect").click()
            [session] = talk.sessions
            await asyncio.wait_for(session.finished.wait(), WAIT_MS / 1000)
        finally:
            await browser.close()
    assert lines[0] == ("Greeter", GREETING)
    assert lines[1][0] == "caller"
    assert "billing" in lines[1][1].lower()
    assert lines[2:] == [("Greeter", HANDOFF), ("Billing", BILLING)]
    assert notes == [
        "Greeter has the call",
        "handoff: Greeter \u2192 Billing (transfer_to_billing)",
    ]
    assert session.journal.members_visited == ["greeter", "billing"]
    assert session.journal.end_reason == "hung_up"
    assert outside == [], "the page loaded something from outside the talk server"

    assert talk.timelines == [tmp_path / "out" / "call-01.html"]
    page = talk.timelines[0].read_text()
    assert outside_references(page) == []
    turns = embedded_turns(page)
    assert turns[0]["opener"] == "opening" and turns[0]["said"] == GREETING
    [handoff] = [t for t in turns if t["handoff"]]
    assert handoff["opener"] == "caller" and "billing" in handoff["said"].lower()
    assert handoff["handoff"] == "Greeter → Billing"
    steps = [s["what"] for s in handoff["steps"]]
    assert f"handoff line “{HANDOFF}”" in steps
    assert "handoff Greeter → Billing (transfer_to_billing)" in steps


async def test_the_prebuilt_clients_signalling_and_files_are_served_from_the_installed_packages(
    talk: Talk,
) -> None:
    async with httpx.AsyncClient(base_url=talk.url, timeout=30) as http:
        start = await http.post("/start", json={"transport": "webrtc"})
        page = await http.get("/")
        prebuilt = await http.get("/prebuilt/")
    assert start.status_code == 200
    # No ICE servers: a STUN server out on the internet is no use on one machine.
    assert set(start.json()) == {"sessionId"}
    assert page.status_code == 200
    assert '<h1 id="team">Acme front desk: teamrunner talk</h1>' in page.text
    assert not re.search(r"(src|href)=\"https?://", page.text)
    assert prebuilt.status_code == 200
    assert "<title>Pipecat UI</title>" in prebuilt.text


def test_teamrunner_talk_serves_until_ctrl_c() -> None:
    command = subprocess.Popen(
        [str(TEAMRUNNER), "talk", str(DEMO_TEAM), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert command.stdout is not None
        for line in command.stdout:
            if line.startswith("open "):
                break
        url = line.split()[1]
        assert httpx.get(url, timeout=30).status_code == 200
    finally:
        command.send_signal(signal.SIGINT)
        status = command.wait(timeout=60)
    assert re.fullmatch(
        r"open http://127\.0\.0\.1:\d+/ and press connect \(Ctrl-C to stop\)\n", line
    )
    assert status == 128 + signal.SIGINT


async def test_an_offer_on_the_prebuilt_clients_session_path_gets_pipecats_answer(
    talk: Talk,
) -> None:
    from aiortc import RTCConfiguration, RTCPeerConnection

    peer = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    try:
        peer.addTransceiver("audio", direction="sendrecv")
        peer.createDataChannel("chat")
        await peer.setLocalDescription(await peer.createOffer())
        offer = {"sdp": peer.localDescription.sdp, "type": peer.localDescription.type}
        async with httpx.AsyncClient(base_url=talk.url, timeout=30) as http:
            session = (await http.post("/start", json={})).json()["sessionId"]
            answer = await http.post(f"/sessions/{session}/api/offer", json=offer)
        assert answer.status_code == 200
        body = answer.json()
        assert body["type"] == "answer"
        assert body["pc_id"]
        # pipecat's peer answers the caller's audio and the RTVI data channel.
        assert "m=audio" in body["sdp"]
        assert "m=application" in body["sdp"]
    finally:
        await peer.close()
