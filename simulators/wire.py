"""The bytes on pipecat-manager's websockets: pipecat protobuf frames and Go's JSON.

Decodes each binary message the runner sends on the output socket into an
event (``read_output``), and encodes what the simulator sends on the input
socket: 20 ms caller audio frames (``caller_audio``) and RTVI ``send-text``
messages (``send_text``), with JSON written the way Go's ``encoding/json``
writes it (``go_json``). It holds no sockets and no call state.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.message import DecodeError
from pipecat.frames.protobufs import frames_pb2

from simulators.events import (
    RTVI_LABEL,
    AudioChunk,
    Event,
    InterruptionEvent,
    InvalidMessage,
    RTVIMessage,
    TextEvent,
    TranscriptionEvent,
)
from simulators.wav import PHONE_RATE

_proto: Any = frames_pb2  # pipecat's frames.proto; generated code has no type stubs


def go_json(value: Any) -> str:
    """JSON as Go's ``encoding/json.Marshal`` writes it: compact, UTF-8, with
    ``<``, ``>``, ``&``, U+2028 and U+2029 escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def caller_audio(pcm: bytes, packet_id: int) -> bytes:
    """One ``AudioRawFrame`` of 16 kHz mono caller audio, numbered as Go numbers them."""
    audio = _proto.AudioRawFrame(id=packet_id, audio=pcm, sample_rate=PHONE_RATE, num_channels=1)
    return bytes(_proto.Frame(audio=audio).SerializeToString())


def send_text(
    message_id: str, text: str, *, run_immediately: bool, audio_response: bool
) -> tuple[str, bytes]:
    """An RTVI ``send-text`` as Go's ``SendRTVIText`` sends it: ``(json, frame bytes)``."""
    options = {"run_immediately": run_immediately, "audio_response": audio_response}
    data = go_json(
        {
            "id": message_id,
            "label": RTVI_LABEL,
            "type": "send-text",
            "data": {"content": text, "options": options},
        }
    )
    frame = _proto.Frame(message=_proto.MessageFrame(data=data))
    return data, bytes(frame.SerializeToString())


def read_output(data: bytes, *, seq: int, at: float) -> tuple[Event, str | None]:
    """The event for one binary message from the runner's output socket.

    Returns the event and, when Go would stop reading the socket (non-mono
    audio), the reason to close it with; otherwise None.
    """
    try:
        frame = _proto.Frame.FromString(data)
    except DecodeError as e:
        return InvalidMessage(seq=seq, at=at, reason=f"bad protobuf: {e}", raw=data), None
    kind = frame.WhichOneof("frame")
    if kind == "audio":
        audio = frame.audio
        if audio.num_channels != 1:
            reason = f"only mono audio is supported, got num_channels={audio.num_channels}"
            return InvalidMessage(seq=seq, at=at, reason=reason, raw=data), reason
        chunk = AudioChunk(
            seq=seq,
            at=at,
            pcm=audio.audio,
            sample_rate=audio.sample_rate,
            num_channels=audio.num_channels,
            frame_id=audio.id,
        )
        return chunk, None
    if kind == "text":
        return TextEvent(seq=seq, at=at, text=frame.text.text), None
    if kind == "transcription":
        t = frame.transcription
        event = TranscriptionEvent(
            seq=seq, at=at, text=t.text, user_id=t.user_id, timestamp=t.timestamp
        )
        return event, None
    if kind == "message":
        return _message_event(seq, at, frame.message.data, data), None
    if kind == "interruption":
        return InterruptionEvent(seq=seq, at=at), None
    return InvalidMessage(seq=seq, at=at, reason="frame with no content", raw=data), None


def _message_event(seq: int, at: float, data: str, raw: bytes) -> Event:
    try:
        message = json.loads(data)
    except ValueError as e:
        return InvalidMessage(seq=seq, at=at, reason=f"MessageFrame data is not JSON: {e}", raw=raw)
    if not isinstance(message, dict):
        return InvalidMessage(seq=seq, at=at, reason="MessageFrame data is not an object", raw=raw)
    label, kind = message.get("label"), message.get("type")
    return RTVIMessage(
        seq=seq,
        at=at,
        label=label if isinstance(label, str) else None,
        type=kind if isinstance(kind, str) else None,
        data=message.get("data"),
        message=message,
    )
