"""The pipecat-manager simulator speaks the Go side's wire: tested over real sockets.

The client here dials the simulator the way the runner does (two websockets per
call carrying pipecat protobuf frames, plain HTTP POSTs for tools and member
switches); nothing from the runner is imported.
"""

from __future__ import annotations

import asyncio
import json
import struct
import time
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from pipecat.frames.protobufs import frames_pb2
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus

from simulators.manager import (
    FLUSH_MEDIA,
    AudioChunk,
    Caller,
    ConnectionEvent,
    Direction,
    InvalidMessage,
    ManagerSimulator,
    ManagerSimulatorError,
    Party,
    Reply,
    RTVIMessage,
    SegmentKind,
    TextEvent,
    ToolResult,
    TranscriptionEvent,
)
from simulators.wav import read_wav_16k_mono, write_call_wav, write_wav

proto: Any = frames_pb2


# --- A client that behaves like the runner -----------------------------------


def dial(sim: ManagerSimulator, call_id: str, direction: str) -> Any:
    return connect(f"{sim.ws_url}/{call_id}/ws?direction={direction}")


async def next_frame(ws: ClientConnection, timeout: float = 2.0) -> Any:
    data = await asyncio.wait_for(ws.recv(), timeout)
    assert isinstance(data, bytes), "the simulator sends only binary messages"
    return proto.Frame.FromString(data)


async def next_audio(ws: ClientConnection, count: int, timeout: float = 2.0) -> list[Any]:
    frames: list[Any] = []
    while len(frames) < count:
        frame = await next_frame(ws, timeout)
        if frame.WhichOneof("frame") == "audio":
            frames.append(frame.audio)
    return frames


def audio_frame(pcm: bytes, sample_rate: int = 16000) -> bytes:
    audio = proto.AudioRawFrame(audio=pcm, sample_rate=sample_rate, num_channels=1)
    return proto.Frame(audio=audio).SerializeToString()


def rtvi_frame(type: str, data: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"label": "rtvi-ai", "type": type}
    if data is not None:
        message["data"] = data
    return proto.Frame(message=proto.MessageFrame(data=json.dumps(message))).SerializeToString()


def text_frame(text: str) -> bytes:
    return proto.Frame(text=proto.TextFrame(text=text)).SerializeToString()


def tone(secs: float, rate: int = 16000, freq: float = 440.0) -> bytes:
    t = np.arange(round(secs * rate)) / rate
    return (np.sin(2 * np.pi * freq * t) * 12000).astype("<i2").tobytes()


async def post(sim: ManagerSimulator, path: str, body: Any) -> tuple[int, str, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.http_url}{path}", data=json.dumps(body)) as response,
    ):
        return response.status, response.content_type, await response.text()


@pytest.fixture
async def sim() -> AsyncIterator[ManagerSimulator]:
    async with ManagerSimulator() as simulator:
        assert isinstance(simulator, ManagerSimulator)
        yield simulator


# --- Caller audio on the input socket ----------------------------------------


async def test_caller_wav_arrives_as_20ms_frames_of_16k_mono(
    sim: ManagerSimulator, tmp_path: Path
) -> None:
    pcm = tone(0.25)  # 12.5 frames: the last one is padded with silence
    write_wav(tmp_path / "hello.wav", pcm, 16000)
    sim.expect_call(
        "c1",
        caller=Caller(Caller.wav(tmp_path / "hello.wav"), realtime=False, speed=0, then="stop"),
    )

    async with dial(sim, "c1", "output"), dial(sim, "c1", "input") as inp:
        frames = await next_audio(inp, 13)
        with pytest.raises(TimeoutError):
            await next_frame(inp, timeout=0.2)  # then="stop": nothing after the script

    assert [len(f.audio) for f in frames] == [640] * 13
    assert {(f.sample_rate, f.num_channels) for f in frames} == {(16000, 1)}
    assert [f.id for f in frames] == list(range(13))
    sent = pcm + bytes(13 * 640 - len(pcm))
    assert b"".join(f.audio for f in frames) == sent
    [segment] = sim.call("c1").caller_segments
    assert (segment.kind, segment.label, segment.frames, segment.pcm) == (
        SegmentKind.AUDIO,
        "hello.wav",
        13,
        sent,
    )


def test_wav_of_any_layout_is_read_as_16k_mono(tmp_path: Path) -> None:
    rate, secs = 44100, 0.5
    t = np.arange(round(rate * secs)) / rate
    left = 0.5 * np.sin(2 * np.pi * 440 * t)
    stereo = np.stack([left, left], axis=1).astype("<f4")
    path = tmp_path / "float-stereo.wav"
    data = stereo.tobytes()
    # fmt: IEEE float (3), 2 channels, 44.1 kHz, byte rate, block align 8, 32 bits.
    fmt = struct.pack("<HHIIHH", 3, 2, rate, rate * 8, 8, 32)
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data))
    path.write_bytes(
        b"RIFF" + struct.pack("<I", 4 + len(chunks) + len(data)) + b"WAVE" + chunks + data
    )

    pcm = read_wav_16k_mono(path)

    samples = np.frombuffer(pcm, dtype="<i2")
    assert abs(len(samples) - 8000) <= 1
    spectrum = np.abs(np.fft.rfft(samples))
    assert abs(np.argmax(spectrum) * 16000 / len(samples) - 440) < 5


@pytest.mark.parametrize(
    ("realtime", "speed", "expected"),
    [(True, 1.0, 0.38), (False, 4.0, 0.095)],
    ids=["realtime", "4x"],
)
async def test_caller_audio_is_paced_at_real_time_or_scaled_by_speed(
    sim: ManagerSimulator, realtime: bool, speed: float, expected: float
) -> None:
    caller = Caller(Caller.pcm(tone(0.4)), realtime=realtime, speed=speed, then="stop")
    sim.expect_call("paced", caller=caller)

    async with dial(sim, "paced", "output"), dial(sim, "paced", "input") as inp:
        await next_audio(inp, 1)
        first = time.monotonic()
        await next_audio(inp, 19)
        elapsed = time.monotonic() - first

    # 20 frames: 19 intervals of 20 ms / speed between the first and the last.
    assert expected * 0.85 < elapsed < expected + 0.15
    [segment] = sim.call("paced").caller_segments
    assert segment.ended_at is not None
    # Loose bounds: the machine may be busy; what matters is the pace, not the millisecond.
    assert expected * 0.85 < segment.ended_at - segment.started_at < expected + 0.15


async def test_caller_waits_for_the_output_socket_by_default(sim: ManagerSimulator) -> None:
    sim.expect_call("late", caller=Caller(Caller.silence(0.04), then="stop"))

    async with dial(sim, "late", "input") as inp:
        with pytest.raises(TimeoutError):
            await next_frame(inp, timeout=0.3)
        async with dial(sim, "late", "output"):
            await next_audio(inp, 1)

    call = sim.call("late")
    output_at = call.connected_at(Direction.OUTPUT)
    assert output_at is not None
    assert call.caller_segments[0].started_at >= output_at


async def test_on_connect_caller_talks_before_the_output_socket_opens(
    sim: ManagerSimulator,
) -> None:
    sim.expect_call("early", caller=Caller(Caller.pcm(tone(0.04)), start="on_connect"))

    async with dial(sim, "early", "input") as inp:
        [frame] = await next_audio(inp, 1, timeout=1.0)

    assert frame.audio == tone(0.04)[:640]
    assert sim.call("early").connected_at(Direction.OUTPUT) is None


async def test_say_replaces_the_filler_silence_mid_call(sim: ManagerSimulator) -> None:
    async with dial(sim, "barge", "output"), dial(sim, "barge", "input") as inp:
        silent = await next_audio(inp, 3)
        assert all(f.audio == bytes(640) for f in silent)
        await sim.say("barge", Caller.pcm(tone(0.1), label="barge-in"))
        frames = await next_audio(inp, 12)

    audio = b"".join(f.audio for f in frames)
    start = audio.index(tone(0.1)[:640])
    assert start <= 2 * 640, "the queued audio should start within a frame or two"
    assert audio[start : start + 3200] == tone(0.1)
    assert audio[start + 3200 :].strip(b"\0") == b""
    kinds = [s.kind for s in sim.call("barge").caller_segments]
    assert kinds == [SegmentKind.FILLER, SegmentKind.AUDIO, SegmentKind.FILLER]


def test_caller_options_fail_fast_with_the_accepted_values() -> None:
    with pytest.raises(ValueError, match="'after_output', 'on_connect'"):
        Caller(start="later")
    with pytest.raises(ValueError, match="needs realtime=False"):
        Caller(speed=2.0)


# --- What the runner sends on the output socket ------------------------------


async def test_output_frames_are_recorded_in_order_with_typed_views(
    sim: ManagerSimulator,
) -> None:
    bot_pcm = tone(0.1, rate=24000)
    async with dial(sim, "out", "output") as out:
        for message in [
            rtvi_frame("user-transcription", {"text": "hel", "final": False}),
            rtvi_frame("user-transcription", {"text": "hello", "final": True}),
            rtvi_frame("bot-llm-started"),
            rtvi_frame("bot-llm-text", {"text": "Hi"}),
            rtvi_frame("bot-llm-text", {"text": " there"}),
            rtvi_frame("bot-llm-stopped"),
            audio_frame(bot_pcm, sample_rate=24000),
            rtvi_frame("bot-transcription", {"text": "Hi there."}),
            text_frame(FLUSH_MEDIA),
        ]:
            await out.send(message)
        transcription = proto.TranscriptionFrame(text="hello", user_id="u", timestamp="t")
        await out.send(proto.Frame(transcription=transcription).SerializeToString())
        await out.send("a text message Go ignores")
        await out.send(b"\xff\xff not a protobuf")
        await out.send(rtvi_frame("bot-llm-stopped"))  # a tool-call turn: no text
        call = await sim.wait_call("out")
        await call.wait_rtvi("bot-llm-stopped", count=2)

    kinds = [type(e) for e in call.events if not isinstance(e, ConnectionEvent)]
    # The text (non-binary) message is counted, not recorded; the bad protobuf is recorded.
    assert kinds == [RTVIMessage] * 6 + [
        AudioChunk,
        RTVIMessage,
        TextEvent,
        TranscriptionEvent,
        InvalidMessage,
        RTVIMessage,
    ]
    assert [e.seq for e in call.events] == list(range(len(call.events)))
    assert [e.at for e in call.events] == sorted(e.at for e in call.events)
    assert call.user_transcripts() == ["hello"]
    assert call.bot_llm_text() == ["Hi there"]
    assert call.bot_llm_text(include_empty=True) == ["Hi there", ""]
    assert call.bot_transcripts() == ["Hi there."]
    assert [m.type for m in call.rtvi("bot-llm-text")] == ["bot-llm-text"] * 2
    assert [f.text for f in call.flushes()] == [FLUSH_MEDIA]
    assert [t.text for t in call.transcriptions()] == ["hello"]
    assert (call.received_bot_audio(), call.bot_audio_rate) == (bot_pcm, 24000)
    assert call.ignored_text_messages == 1
    assert [m.reason.split(":")[0] for m in call.invalid_messages()] == ["bad protobuf"]


async def test_flush_media_drops_bot_audio_the_caller_had_not_heard(
    sim: ManagerSimulator, tmp_path: Path
) -> None:
    first, second = tone(1.0), tone(0.2, freq=660)
    async with dial(sim, "flush", "output") as out:
        for offset in range(0, len(first), 640):  # 1 s of audio, unpaced, like TTS output
            await out.send(audio_frame(first[offset : offset + 640]))
        call = await sim.wait_call("flush")
        await call.wait_bot_audio(min_secs=1.0)
        await asyncio.sleep(0.3)  # the caller listens for 0.3 s, then barges in
        await out.send(text_frame(FLUSH_MEDIA))
        await call.wait(lambda c: bool(c.flushes()))
        await out.send(audio_frame(second))
        await call.wait_bot_audio(min_secs=1.2)

    assert call.received_bot_audio() == first + second
    assert call.received_bot_secs() == pytest.approx(1.2)
    heard = call.heard_bot_audio()
    first_heard = b"".join(pcm for at, pcm in heard if at < call.flushes()[0].at)
    assert 0.28 < len(first_heard) / 32000 < 0.45
    assert first.startswith(first_heard)
    assert heard[-1][1] == second, "audio after the flush plays in full"
    assert call.heard_bot_secs() == pytest.approx(len(first_heard) / 32000 + 0.2)

    call.write_wav(tmp_path / "call.wav")
    with wave.open(str(tmp_path / "call.wav")) as saved:
        assert (saved.getnchannels(), saved.getframerate()) == (2, 16000)


async def test_non_mono_bot_audio_is_a_protocol_error_that_closes_the_socket(
    sim: ManagerSimulator,
) -> None:
    async with dial(sim, "stereo", "output") as out:
        audio = proto.AudioRawFrame(audio=bytes(640), sample_rate=16000, num_channels=2)
        await out.send(proto.Frame(audio=audio).SerializeToString())
        with pytest.raises(ConnectionClosed):
            await out.recv()
    assert out.close_code == 1003
    call = sim.call("stereo")
    assert "only mono audio" in call.invalid_messages()[0].reason


# --- Tool calls and member switches ------------------------------------------


TOOL_BODY = {
    "id": "call_abc",
    "type": "function",
    "function": {"name": "connect_call", "arguments": json.dumps({"destination": "+15551234"})},
}


async def test_tool_call_is_recorded_exactly_and_answered_like_go(sim: ManagerSimulator) -> None:
    status, content_type, text = await post(sim, "/c2/tools", TOOL_BODY)

    assert (status, content_type) == (200, "application/json")
    assert json.loads(text) == {
        "tool_call_id": "call_abc",
        "result": "success",
        "message": "ok",
        "resource_type": "",
        "resource_id": "",
    }
    [tool_call] = sim.call("c2").tool_calls
    assert tool_call.raw_body == json.dumps(TOOL_BODY).encode()
    assert (tool_call.tool_call_id, tool_call.name) == ("call_abc", "connect_call")
    assert tool_call.arguments == {"destination": "+15551234"}
    assert (tool_call.reply_status, tool_call.error) == (200, None)


async def test_tool_replies_follow_the_configured_result_per_tool(sim: ManagerSimulator) -> None:
    sim.tools["get_variables"] = ToolResult.text("plain words")
    sim.expect_call(
        "c3",
        tools={
            "connect_call": ToolResult.ok({"result": "success", "resource_id": "r1"}),
            "send_email": ToolResult.error(400, "bad address"),
            "stop_media": ToolResult.ok(delay=0.3),
        },
    )

    def body(name: str) -> dict[str, Any]:
        return {**TOOL_BODY, "function": {"name": name, "arguments": "{}"}}

    assert await post(sim, "/c3/tools", body("connect_call")) == (
        200,
        "application/json",
        '{"result": "success", "resource_id": "r1"}',
    )
    assert await post(sim, "/c3/tools", body("send_email")) == (
        400,
        "application/json",
        '{"error": "bad address"}',
    )
    assert await post(sim, "/c3/tools", body("get_variables")) == (200, "text/plain", "plain words")
    started = time.monotonic()
    status, _, _ = await post(sim, "/c3/tools", body("stop_media"))
    assert status == 200
    assert time.monotonic() - started >= 0.3
    call = sim.call("c3")
    assert [t.name for t in call.tool_calls] == [
        "connect_call",
        "send_email",
        "get_variables",
        "stop_media",
    ]
    assert [t.reply_status for t in call.tool_calls] == [200, 400, 200, 200]


async def test_tool_arguments_must_be_a_json_string(sim: ManagerSimulator) -> None:
    bad = {**TOOL_BODY, "function": {"name": "connect_call", "arguments": {"destination": "x"}}}

    status, _, text = await post(sim, "/c4/tools", bad)

    assert status == 400
    assert "JSON-encoded string" in json.loads(text)["error"]
    assert sim.call("c4").tool_calls[0].error == json.loads(text)["error"]


MEMBER_SWITCH = {
    "transition_function_name": "transfer_to_sales",
    "from_member": {"id": "m1", "name": "Reception", "engine_model": "openai.gpt-4o"},
    "to_member": {"id": "m2", "name": "Sales", "engine_model": "openai.gpt-4o-mini"},
}


async def test_member_switch_is_recorded_and_acknowledged(sim: ManagerSimulator) -> None:
    status, _, text = await post(sim, "/c5/member-switched", MEMBER_SWITCH)

    assert (status, json.loads(text)) == (200, {"status": "ok"})
    [switch] = await sim.call("c5").wait_member_switches()
    assert switch.transition_function_name == "transfer_to_sales"
    assert (switch.from_member["name"], switch.to_member["name"]) == ("Reception", "Sales")
    assert switch.body == MEMBER_SWITCH


async def test_member_switch_can_fail_slowly(sim: ManagerSimulator) -> None:
    sim.expect_call("c6", member_switched=Reply.error(500, "db down", delay=0.2))

    started = time.monotonic()
    status, _, text = await post(sim, "/c6/member-switched", MEMBER_SWITCH)

    assert (status, json.loads(text)) == (500, {"error": "db down"})
    assert time.monotonic() - started >= 0.2
    assert sim.call("c6").member_switches[0].reply_status == 500


async def test_strict_ids_answer_404_for_unknown_calls() -> None:
    async with ManagerSimulator(strict_ids=True) as strict:
        assert isinstance(strict, ManagerSimulator)
        strict.expect_call("known")
        with pytest.raises(InvalidStatus) as rejected:
            async with dial(strict, "unknown", "output"):
                pass
        assert rejected.value.response.status_code == 404
        assert (await post(strict, "/unknown/tools", TOOL_BODY))[0] == 404
        assert (await post(strict, "/known/tools", TOOL_BODY))[0] == 200
        assert "unknown" not in strict.calls


# --- Control from tests: send-text and hangup --------------------------------


async def test_send_text_sends_exactly_the_contract_json(sim: ManagerSimulator) -> None:
    sim.expect_call("text", caller=Caller(then="stop"))
    async with dial(sim, "text", "output"), dial(sim, "text", "input") as inp:
        await sim.wait_for("text", lambda c: c.is_open(Direction.INPUT))
        message_id = await sim.send_text(
            "text", "Hi <there> & you", run_immediately=True, audio_response=False
        )
        frame = await next_frame(inp)

    assert frame.WhichOneof("frame") == "message"
    # Byte for byte what Go's json.Marshal of its CommonFrameMessage produces.
    assert frame.message.data == (
        f'{{"id":"{message_id}","label":"rtvi-ai","type":"send-text",'
        '"data":{"content":"Hi \\u003cthere\\u003e \\u0026 you",'
        '"options":{"run_immediately":true,"audio_response":false}}}'
    )
    assert json.loads(frame.message.data)["data"]["content"] == "Hi <there> & you"


async def test_send_text_needs_an_open_input_socket(sim: ManagerSimulator) -> None:
    async with dial(sim, "chat", "output"):
        await sim.wait_call("chat")
        with pytest.raises(ManagerSimulatorError, match="no open input socket"):
            await sim.send_text("chat", "hello")


@pytest.mark.parametrize("abrupt", [False, True], ids=["close-frame", "abrupt"])
async def test_hangup_closes_both_sockets(sim: ManagerSimulator, abrupt: bool) -> None:
    sim.expect_call("bye", caller=Caller(then="stop"))
    async with dial(sim, "bye", "output") as out, dial(sim, "bye", "input") as inp:
        call = await sim.wait_for("bye", lambda c: c.is_open(Direction.INPUT))
        await out.send(audio_frame(tone(1.0)))  # queued at the media server...
        await call.wait_bot_audio(min_secs=1.0)
        await sim.hangup("bye", abrupt=abrupt)  # ...and never heard past the hangup
        for ws in (out, inp):
            with pytest.raises(ConnectionClosedError if abrupt else ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 2.0)
            # Without a close frame the client can only report 1006 (abnormal closure).
            assert ws.close_code == (1006 if abrupt else 1000)
        await call.wait_closed()

    closes = [e for e in call.connections() if not e.opened]
    assert {(e.direction, e.closed_by) for e in closes} == {
        (Direction.INPUT, Party.MANAGER),
        (Direction.OUTPUT, Party.MANAGER),
    }
    assert call.hangup_at is not None
    assert call.received_bot_secs() == pytest.approx(1.0)
    assert call.heard_bot_secs() < 0.2


async def test_caller_can_hang_up_after_the_script(sim: ManagerSimulator) -> None:
    script = Caller(Caller.pcm(tone(0.06)), realtime=False, speed=0, then="hangup")
    sim.expect_call("short", caller=script)
    async with dial(sim, "short", "output") as out, dial(sim, "short", "input") as inp:
        await next_audio(inp, 3)
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(out.recv(), 2.0)
    call = sim.call("short")
    await call.wait_closed()
    assert call.script_done_at is not None
    assert call.caller_speech_ended_at() is not None


async def test_runner_closing_a_socket_is_recorded_as_the_runner(sim: ManagerSimulator) -> None:
    async with dial(sim, "gone", "output"):
        call = await sim.wait_call("gone")
    await call.wait_closed()
    [closed] = [e for e in call.connections() if not e.opened]
    assert (closed.direction, closed.closed_by, closed.close_code) == (
        Direction.OUTPUT,
        Party.RUNNER,
        1000,
    )


async def test_waits_time_out_naming_the_call_and_what_was_missing(
    sim: ManagerSimulator,
) -> None:
    call = sim.expect_call("quiet")
    with pytest.raises(TimeoutError, match=r"call quiet: 1 x RTVI 'bot-llm-stopped'"):
        await call.wait_rtvi("bot-llm-stopped", timeout=0.1)


# --- Saving a call -----------------------------------------------------------


def test_write_call_wav_lays_caller_and_bot_on_one_clock(tmp_path: Path) -> None:
    caller = [(100.0, tone(0.5))]
    bot = [(100.7, tone(0.3, rate=24000))]

    origin = write_call_wav(tmp_path / "call.wav", caller, bot, bot_sample_rate=24000)

    assert origin == 100.0
    with wave.open(str(tmp_path / "call.wav")) as saved:
        assert (saved.getnchannels(), saved.getframerate()) == (2, 16000)
        assert saved.getnframes() == 16000  # 0.7 s to the bot's start + 0.3 s of bot
        stereo = np.frombuffer(saved.readframes(saved.getnframes()), "<i2").reshape(-1, 2)
    left, right = np.abs(stereo[:, 0]), np.abs(stereo[:, 1])
    assert left[:8000].max() > 5000 and left[8000:].max() == 0
    assert right[:11200].max() == 0 and right[11300:].max() > 5000
