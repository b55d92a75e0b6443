"""What can happen on a simulated pipecat-manager call, as typed events, and how to say it.

Each event is a frozen dataclass with ``seq`` (its place in the call) and
``at`` (``time.monotonic()``): the sockets opening and closing, every frame the
runner sends on the output socket, the RTVI text the simulator sends, and the
two HTTP requests. ``describe`` turns one into the line the simulator's log
prints. This module holds no state: ``record.py`` keeps a call's events, and
``wire.py`` makes them from protobuf frames.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from simulators.wav import SAMPLE_WIDTH

if TYPE_CHECKING:
    from simulators.record import CallRecord

RTVI_LABEL = "rtvi-ai"
FLUSH_MEDIA = "FLUSH_MEDIA"


class Direction(StrEnum):
    INPUT = "input"
    OUTPUT = "output"


class Party(StrEnum):
    RUNNER = "runner"
    MANAGER = "manager"


@dataclass(frozen=True, kw_only=True)
class Event:
    """Something that happened on a call: ``seq`` orders them, ``at`` is time.monotonic()."""

    seq: int
    at: float


@dataclass(frozen=True, kw_only=True)
class ConnectionEvent(Event):
    direction: Direction
    opened: bool
    closed_by: Party | None = None
    close_code: int | None = None


@dataclass(frozen=True, kw_only=True)
class AudioChunk(Event):
    pcm: bytes = field(repr=False)
    sample_rate: int
    num_channels: int
    frame_id: int = 0

    @property
    def secs(self) -> float:
        return len(self.pcm) / (self.sample_rate * SAMPLE_WIDTH * max(self.num_channels, 1))


@dataclass(frozen=True, kw_only=True)
class TextEvent(Event):
    """A ``TextFrame``; ``FLUSH_MEDIA`` is the one Go acts on."""

    text: str


@dataclass(frozen=True, kw_only=True)
class RTVIMessage(Event):
    """A ``MessageFrame`` whose ``data`` is a JSON object (RTVI when ``label`` is rtvi-ai)."""

    label: str | None
    type: str | None
    data: Any
    message: dict[str, Any] = field(repr=False)

    @property
    def text(self) -> str:
        """``data.text`` (transcriptions and LLM tokens carry one), or ``""``."""
        return str(self.data.get("text", "")) if isinstance(self.data, dict) else ""

    @property
    def final(self) -> bool:
        """``data.final``: a user transcription Go publishes."""
        return isinstance(self.data, dict) and bool(self.data.get("final"))


@dataclass(frozen=True, kw_only=True)
class TranscriptionEvent(Event):
    text: str
    user_id: str
    timestamp: str


@dataclass(frozen=True, kw_only=True)
class InterruptionEvent(Event):
    """An ``InterruptionFrame``; Go logs it as unrecognized and does nothing."""


@dataclass(frozen=True, kw_only=True)
class InvalidMessage(Event):
    """A binary message Go could not use (bad protobuf, empty frame, non-mono audio, bad JSON)."""

    reason: str
    raw: bytes = field(repr=False)


@dataclass(frozen=True, kw_only=True)
class TextSent(Event):
    """An RTVI ``send-text`` the simulator sent on the input socket."""

    message_id: str
    content: str
    data: str = field(repr=False)


@dataclass(frozen=True, kw_only=True)
class ToolCall(Event):
    """A ``POST /{id}/tools``; ``error`` says why it was answered 400, else None."""

    tool_call_id: str
    name: str
    arguments: Any
    body: Any
    raw_body: bytes = field(repr=False)
    reply_status: int
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class MemberSwitch(Event):
    """A ``POST /{id}/member-switched``; ``error`` says why it was answered 400, else None."""

    transition_function_name: str
    from_member: dict[str, Any]
    to_member: dict[str, Any]
    body: Any
    raw_body: bytes = field(repr=False)
    reply_status: int
    error: str | None = None


_SPEAKING = (
    "user-started-speaking",
    "user-stopped-speaking",
    "bot-started-speaking",
    "bot-stopped-speaking",
)


def describe(call: CallRecord, event: Event, previous_audio_at: float | None) -> str | None:
    """One log line for an event worth showing live, or None.

    ``previous_audio_at`` is when bot audio last arrived before ``event``, so
    only the start of each burst of audio is shown.
    """
    if isinstance(event, ConnectionEvent):
        if event.opened:
            return f"{event.direction} socket connected"
        return f"{event.direction} socket closed by {event.closed_by} (code {event.close_code})"
    if isinstance(event, AudioChunk):
        if previous_audio_at is None or event.at - previous_audio_at > 0.5:
            return f"bot audio ({event.sample_rate} Hz)"
        return None
    if isinstance(event, TextEvent):
        if event.text == FLUSH_MEDIA:
            return "FLUSH_MEDIA: caller barged in, queued bot audio dropped"
        return f"text frame: {event.text!r}"
    if isinstance(event, RTVIMessage):
        return _describe_rtvi(call, event)
    if isinstance(event, ToolCall):
        args = json.dumps(event.arguments, ensure_ascii=False)
        return f"tool call {event.name}({args}) -> {event.reply_status}" + (
            f" ({event.error})" if event.error else ""
        )
    if isinstance(event, MemberSwitch):
        return (
            f"member switch via {event.transition_function_name}: "
            f"{event.from_member.get('name')} -> {event.to_member.get('name')}"
        )
    if isinstance(event, TextSent):
        return f"sent text: {event.content!r}"
    if isinstance(event, InvalidMessage):
        return f"protocol error: {event.reason}"
    if isinstance(event, TranscriptionEvent):
        return f"transcription frame: {event.text!r}"
    return None


def _describe_rtvi(call: CallRecord, m: RTVIMessage) -> str | None:
    if m.type == "user-transcription":
        return f"user: {m.text!r}" if m.final else None
    if m.type == "bot-transcription":
        return f"bot: {m.text!r}"
    if m.type == "bot-llm-stopped":
        texts = call.bot_llm_text(include_empty=True)
        return f"bot LLM: {texts[-1]!r}" if texts and texts[-1] else "bot LLM: (no text)"
    if m.type == "error":
        return f"error: {m.data}"
    if m.type in _SPEAKING:
        return m.type.replace("-", " ")
    return None
