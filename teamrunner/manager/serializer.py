"""The frames on pipecat-manager's sockets: pipecat's protobuf, audio read and written directly.

Both sockets carry pipecat's ``ProtobufFrameSerializer`` frames
(docs/contract.md section 3), and almost every one is audio: 50 caller
frames a second in, a chunk of the bot's voice every 20–40 ms out. pipecat's
serializer reads any frame by walking the protobuf descriptor of its kind
and building a dict of its fields, and writes one by walking the frame's
dataclass fields; for audio that is 9 µs a caller frame and 8 µs a bot
chunk, against 3 and 1.6 µs for the same fields read and set by name. So
audio takes the direct way, and gives the same frame (audio, rate,
channels, and the id, name and pts when set, as pipecat does) or the same
bytes; every other frame takes pipecat's. ``tests/manager/test_serializer.py``
compares both ways frame for frame and byte for byte.

Messages to pipecat-manager (RTVI events) are also scrubbed of the
redactor's secrets on their way out.
"""

from __future__ import annotations

from typing import Any

import pipecat.frames.protobufs.frames_pb2 as frame_protos
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    OutputAudioRawFrame,
    OutputTransportMessageFrame,
    OutputTransportMessageUrgentFrame,
)
from pipecat.serializers.protobuf import ProtobufFrameSerializer

from teamrunner.observe.redaction import Redactor

ProtoFrame = frame_protos.Frame  # type: ignore[attr-defined]


class ManagerSerializer(ProtobufFrameSerializer):
    """pipecat's protobuf serializer: audio the direct way, secrets scrubbed from messages."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    async def serialize(self, frame: Frame) -> str | bytes | None:
        # Exactly the type pipecat's websocket output writes each chunk as; a
        # subclass is not serializable by pipecat and goes its way to be refused.
        if type(frame) is OutputAudioRawFrame:
            return bot_audio_bytes(frame)
        if isinstance(frame, (OutputTransportMessageFrame, OutputTransportMessageUrgentFrame)):
            message = self._redactor.redact_json(frame.message)
            if message is not frame.message:
                frame = type(frame)(message=message)
        return await super().serialize(frame)

    async def deserialize(self, data: str | bytes) -> Frame | None:
        proto = ProtoFrame.FromString(data)
        if proto.WhichOneof("frame") != "audio":
            return await super().deserialize(data)
        return caller_audio_frame(proto.audio)


# The fields of pipecat's audio proto, each a frame attribute of the same name.
AUDIO_FIELDS = ("id", "name", "audio", "sample_rate", "num_channels", "pts")
# Those pipecat's serializer sets on a frame after building it.
KEPT_FIELDS = ("id", "name", "pts")


def bot_audio_bytes(frame: OutputAudioRawFrame) -> bytes:
    """``frame`` as pipecat's serializer writes it: each field of the proto's that is set."""
    proto = ProtoFrame()
    copy_set_fields(frame, proto.audio, AUDIO_FIELDS)
    return proto.SerializeToString()


def caller_audio_frame(audio: Any) -> InputAudioRawFrame:
    """The frame pipecat's serializer reads from ``Frame.audio``: id, name and pts kept if set."""
    frame = InputAudioRawFrame(
        audio=audio.audio, sample_rate=audio.sample_rate, num_channels=audio.num_channels
    )
    copy_set_fields(audio, frame, KEPT_FIELDS)
    return frame


def copy_set_fields(source: Any, target: Any, names: tuple[str, ...]) -> None:
    """Copy each named attribute whose value is truthy: pipecat copies only those, both ways."""
    for name in names:
        value = getattr(source, name)
        if value:
            setattr(target, name, value)
