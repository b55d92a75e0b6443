"""The sockets' serializer reads and writes every frame exactly as pipecat's protobuf serializer.

Audio takes a direct way (``teamrunner.manager.serializer``); these tests put
pipecat's own ``ProtobufFrameSerializer`` beside it, so a field the direct way
forgets, or one pipecat starts to write, fails here.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pipecat.frames.protobufs.frames_pb2 as frame_protos
import pytest
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    InputTransportMessageFrame,
    OutputAudioRawFrame,
    OutputTransportMessageFrame,
    TextFrame,
)
from pipecat.serializers.protobuf import ProtobufFrameSerializer

from teamrunner.manager.serializer import ManagerSerializer
from teamrunner.observe.redaction import Redactor

SECRET = "sk-test-serializer-secret-000000"


def audio_proto(**fields_set: Any) -> bytes:
    proto = frame_protos.Frame()  # type: ignore[attr-defined]
    for name, value in fields_set.items():
        setattr(proto.audio, name, value)
    return proto.SerializeToString()


def frame_fields(frame: Frame) -> dict[str, Any]:
    """A frame's fields, leaving out the id and name every new frame gets afresh."""
    return {f.name: getattr(frame, f.name) for f in fields(frame) if f.name not in ("id", "name")}


CALLER_AUDIO = [
    pytest.param({"audio": b"\x01\x02" * 320, "sample_rate": 16000, "num_channels": 1}, id="20ms"),
    pytest.param({"audio": b"\x07" * 1280, "sample_rate": 8000, "num_channels": 2}, id="stereo"),
    pytest.param({"sample_rate": 16000, "num_channels": 1}, id="empty"),
    pytest.param(
        {"audio": b"\x05" * 640, "sample_rate": 16000, "num_channels": 1, "pts": 123456},
        id="with-pts",
    ),
]


@pytest.mark.parametrize("sent", CALLER_AUDIO)
async def test_caller_audio_is_read_into_the_frame_pipecat_reads(sent: dict[str, Any]) -> None:
    data = audio_proto(**sent)

    ours = await ManagerSerializer(Redactor()).deserialize(data)
    pipecats = await ProtobufFrameSerializer().deserialize(data)

    assert type(ours) is type(pipecats) is InputAudioRawFrame
    assert frame_fields(ours) == frame_fields(pipecats)
    assert ours.audio == sent.get("audio", b"")


async def test_caller_audio_keeps_the_id_and_name_it_was_sent_with_as_pipecat_does() -> None:
    data = audio_proto(audio=b"\x01" * 640, sample_rate=16000, num_channels=1, id=42, name="go#7")

    ours = await ManagerSerializer(Redactor()).deserialize(data)
    pipecats = await ProtobufFrameSerializer().deserialize(data)

    assert (ours.id, ours.name) == (pipecats.id, pipecats.name) == (42, "go#7")
    assert frame_fields(ours) == frame_fields(pipecats)


BOT_AUDIO = [
    pytest.param(dict(audio=b"\x03\x04" * 640, sample_rate=16000, num_channels=1), id="40ms"),
    pytest.param(dict(audio=b"", sample_rate=16000, num_channels=1), id="empty"),
    pytest.param(dict(audio=b"\x09" * 320, sample_rate=24000, num_channels=2), id="stereo"),
]


@pytest.mark.parametrize("made", BOT_AUDIO)
@pytest.mark.parametrize("pts", [None, 0, 987654321])
async def test_bot_audio_is_written_byte_for_byte_as_pipecat_writes_it(
    made: dict[str, Any], pts: int | None
) -> None:
    frame = OutputAudioRawFrame(**made)
    frame.pts = pts

    ours = await ManagerSerializer(Redactor()).serialize(frame)
    pipecats = await ProtobufFrameSerializer().serialize(frame)

    assert isinstance(ours, bytes)
    assert ours == pipecats
    # And it reads back as the chunk it was.
    back = frame_protos.Frame.FromString(ours).audio  # type: ignore[attr-defined]
    assert (back.audio, back.id, back.name) == (frame.audio, frame.id, frame.name)


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(TextFrame(text="FLUSH_MEDIA"), id="text"),
        pytest.param(OutputTransportMessageFrame(message={"type": "ok"}), id="message"),
    ],
)
async def test_other_frames_are_written_as_pipecat_writes_them(frame: Frame) -> None:
    assert await ManagerSerializer(Redactor()).serialize(frame) == (
        await ProtobufFrameSerializer().serialize(frame)
    )


async def test_a_message_from_pipecat_manager_is_read_as_pipecat_reads_it() -> None:
    proto = frame_protos.Frame()  # type: ignore[attr-defined]
    proto.message.data = json.dumps({"type": "send-text", "data": {"content": "hi"}})
    data = proto.SerializeToString()

    ours = await ManagerSerializer(Redactor()).deserialize(data)
    pipecats = await ProtobufFrameSerializer().deserialize(data)

    assert type(ours) is type(pipecats) is InputTransportMessageFrame
    assert ours.message == pipecats.message == {"type": "send-text", "data": {"content": "hi"}}


async def test_a_message_to_pipecat_manager_has_the_secrets_scrubbed() -> None:
    redactor = Redactor([SECRET])
    frame = OutputTransportMessageFrame(message={"type": "error", "detail": f"bad key {SECRET}"})

    written = await ManagerSerializer(redactor).serialize(frame)

    assert isinstance(written, bytes)
    message = json.loads(frame_protos.Frame.FromString(written).message.data)  # type: ignore[attr-defined]
    assert SECRET not in json.dumps(message)
    assert message["type"] == "error"
