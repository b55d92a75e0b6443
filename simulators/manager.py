"""A simulator of pipecat-manager's wire, so the runner can be tested without the Go service.

It is not pipecat-manager: no Asterisk, no flows, no database, no AI manager
behind the tool endpoint. It serves on loopback the four things the runner
touches (CONTRACT sections 2-4), byte-compatible with what the Go side sends
and accepts:

- ``GET /{id}/ws?direction=input``: plays a scripted caller (``Caller``) as
  protobuf ``AudioRawFrame``s, 20 ms of 16 kHz mono s16le each, paced like a
  phone line, and injects RTVI ``send-text`` messages on request.
- ``GET /{id}/ws?direction=output``: decodes every protobuf frame the runner
  sends and records it (``CallRecord``), emulating the media server's playout
  of bot audio and its reaction to ``FLUSH_MEDIA``.
- ``POST /{id}/tools`` and ``POST /{id}/member-switched``: records the request
  and answers as configured (``Reply``), optionally after a delay.

Where this differs from Go on purpose it says so: Go answers a bad
``direction`` with an empty 200 and stops reading an output socket that sent
non-mono audio; the simulator answers 400 and closes the socket with a reason,
so the failure is legible in a test.

Run it by hand with ``python -m simulators.manager --port 8001``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import WSMsgType, web
from google.protobuf.message import DecodeError
from pipecat.frames.protobufs import frames_pb2

from simulators.server import Simulator
from simulators.wav import PHONE_RATE, SAMPLE_WIDTH, read_wav_16k_mono, resample_pcm16
from simulators.wav import write_call_wav as _write_call_wav

FRAME_SECS = 0.02
"""Caller audio per input frame, as Go sends it."""

FRAME_BYTES = round(PHONE_RATE * FRAME_SECS) * SAMPLE_WIDTH
"""640: bytes of one 20 ms caller frame."""

RTVI_LABEL = "rtvi-ai"
FLUSH_MEDIA = "FLUSH_MEDIA"

_proto: Any = frames_pb2  # pipecat's frames.proto; generated code has no type stubs

_E = TypeVar("_E", bound=StrEnum)
_Ev = TypeVar("_Ev", bound="Event")


class ManagerSimulatorError(RuntimeError):
    """A test asked the simulator for something the call's state does not allow."""


class Direction(StrEnum):
    INPUT = "input"
    OUTPUT = "output"


class Start(StrEnum):
    """When the caller starts talking on the input socket."""

    AFTER_OUTPUT = "after_output"  # once the output socket is up too, like Go
    ON_CONNECT = "on_connect"  # the moment the input socket opens


class Then(StrEnum):
    """What the line does once the caller's script is played."""

    SILENCE = "silence"  # real-time silence until the call ends, like a phone line
    STOP = "stop"  # send nothing until more audio is queued with ``say``
    HANGUP = "hangup"  # close both sockets, like Go ending the call


class Party(StrEnum):
    RUNNER = "runner"
    MANAGER = "manager"


class SegmentKind(StrEnum):
    AUDIO = "audio"
    SILENCE = "silence"
    FILLER = "filler"  # the line's silence after the script (``Then.SILENCE``)


# --- The caller -------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A piece of caller audio: 16 kHz mono s16le."""

    pcm: bytes = field(repr=False)
    kind: SegmentKind
    label: str

    @property
    def secs(self) -> float:
        return len(self.pcm) / (PHONE_RATE * SAMPLE_WIDTH)


class Caller:
    """A scripted caller: segments played in order, then ``then``.

    Example: ``Caller(Caller.silence(0.5), Caller.wav("hello.wav"), speed=0, realtime=False)``.

    Args:
        *segments: What to play, built with ``silence``, ``wav`` and ``pcm``.
        realtime: Pace frames at real time (20 ms per frame).
        speed: With ``realtime=False``, how many times faster than real time;
            0 sends as fast as the socket takes it. The filler silence after
            the script is always real time.
        start: ``Start.AFTER_OUTPUT`` (default) or ``Start.ON_CONNECT``.
        then: ``Then.SILENCE`` (default), ``Then.STOP`` or ``Then.HANGUP``.
    """

    def __init__(
        self,
        *segments: Segment,
        realtime: bool = True,
        speed: float = 1.0,
        start: Start | str = Start.AFTER_OUTPUT,
        then: Then | str = Then.SILENCE,
    ) -> None:
        if speed < 0:
            raise ValueError(f"Caller speed={speed}: must be >= 0 (0 = as fast as possible)")
        if realtime and speed != 1.0:
            raise ValueError(f"Caller speed={speed} needs realtime=False")
        self.segments = list(segments)
        self.realtime = realtime
        self.speed = speed
        self.start = _enum(Start, start, "start")
        self.then = _enum(Then, then, "then")

    @property
    def pace(self) -> float:
        """Speed factor of the script: 1.0 real time, 0.0 unpaced."""
        return 1.0 if self.realtime else self.speed

    @staticmethod
    def silence(secs: float) -> Segment:
        return Segment(
            bytes(round(secs * PHONE_RATE) * SAMPLE_WIDTH), SegmentKind.SILENCE, "silence"
        )

    @staticmethod
    def wav(path: str | Path) -> Segment:
        """Any PCM or float WAV, converted to 16 kHz mono."""
        return Segment(read_wav_16k_mono(path), SegmentKind.AUDIO, Path(path).name)

    @staticmethod
    def pcm(data: bytes, sample_rate: int = PHONE_RATE, label: str = "pcm") -> Segment:
        """Mono s16le audio, resampled to 16 kHz if needed."""
        return Segment(resample_pcm16(data, sample_rate, PHONE_RATE), SegmentKind.AUDIO, label)


def _enum(kind: type[_E], value: _E | str, name: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        accepted = ", ".join(repr(v.value) for v in kind)
        raise ValueError(f"Caller {name}={value!r}: accepted are {accepted}") from None


# --- Replies to the HTTP endpoints -------------------------------------------


@dataclass(frozen=True)
class Reply:
    """How the simulator answers a tool call or a member-switch notification.

    ``body=None`` means the endpoint's default: Go's success object for a tool
    call (with the request's ``tool_call_id``), ``{"status": "ok"}`` for a
    member switch.
    """

    status: int = 200
    body: Any = None
    plain: str | None = None
    delay: float = 0.0

    @classmethod
    def ok(cls, data: Mapping[str, Any] | None = None, *, delay: float = 0.0) -> Reply:
        return cls(200, None if data is None else dict(data), delay=delay)

    @classmethod
    def error(
        cls, status: int = 500, error: Any = "simulated failure", *, delay: float = 0.0
    ) -> Reply:
        """``status`` with ``{"error": error}`` (Go's error shape)."""
        return cls(status, {"error": error}, delay=delay)

    @classmethod
    def text(cls, text: str, *, status: int = 200, delay: float = 0.0) -> Reply:
        """A ``text/plain`` body, which the runner must pass on as ``{"raw": text}``."""
        return cls(status, plain=text, delay=delay)

    def response(self, default_body: Any) -> web.Response:
        if self.plain is not None:
            return web.Response(status=self.status, text=self.plain, content_type="text/plain")
        body = default_body if self.body is None else self.body
        return web.json_response(body, status=self.status)


ToolResult = Reply
"""The name tests use for a tool's reply."""


# --- What the call record holds ----------------------------------------------


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


@dataclass
class SentSegment:
    """Caller audio as it went out.

    ``started_at`` and ``ended_at`` are the send times of its first and latest
    frame: the moment the runner can have the segment's first and last 20 ms.
    """

    label: str
    kind: SegmentKind
    started_at: float
    ended_at: float | None = None
    frames: int = 0
    audio: bytearray = field(default_factory=bytearray, repr=False)

    @property
    def pcm(self) -> bytes:
        return bytes(self.audio)


@dataclass
class _Playout:
    """One bot audio chunk on the media server's playout timeline."""

    chunk: AudioChunk
    start: float
    end: float
    cut: float | None = None  # when FLUSH_MEDIA stopped it


class CallRecord:
    """Everything the simulator saw and did on one call, with typed views and waits."""

    def __init__(
        self,
        call_id: str,
        *,
        caller: Caller,
        tools: Mapping[str, Reply],
        member_switched: Reply | None,
        expected: bool,
        wait_until: Callable[[Callable[[], bool], float], Awaitable[None]],
    ) -> None:
        self.call_id = call_id
        self.caller = caller
        self.tools = dict(tools)
        self.member_switched = member_switched
        self.expected = expected
        self.events: list[Event] = []
        self.caller_segments: list[SentSegment] = []
        self.last_bot_audio_at: float | None = None  # arrival of the latest bot audio chunk
        self.hangup_at: float | None = None  # when the simulator hung up, if it did
        self.script_done_at: float | None = None  # when the caller ran out of script
        self.ignored_text_messages = 0  # non-binary messages on the output socket
        self.ignored_input_messages = 0  # anything the runner sent on the input socket
        self._wait_until = wait_until
        self._by_type: dict[type[Event], list[Event]] = {}
        self._received_secs = 0.0

    def __repr__(self) -> str:
        return f"<CallRecord {self.call_id} events={len(self.events)}>"

    def add(self, event: Event) -> None:
        """Append an event (the simulator's side; ``seq`` is ``len(events)`` before it)."""
        self.events.append(event)
        self._by_type.setdefault(type(event), []).append(event)
        if isinstance(event, AudioChunk):
            self._received_secs += event.secs
            self.last_bot_audio_at = event.at

    # Typed views of ``events``.

    def of_type(self, kind: type[_Ev]) -> list[_Ev]:
        """The events of one concrete event class, in order."""
        return list(self._by_type.get(kind, []))  # type: ignore[arg-type]

    def connections(self, direction: Direction | None = None) -> list[ConnectionEvent]:
        return [
            e
            for e in self.of_type(ConnectionEvent)
            if direction is None or e.direction == direction
        ]

    def rtvi(self, type: str | None = None) -> list[RTVIMessage]:
        """RTVI messages (label ``rtvi-ai``), optionally only those of one ``type``."""
        return [
            m
            for m in self.of_type(RTVIMessage)
            if m.label == RTVI_LABEL and (type is None or m.type == type)
        ]

    def user_transcripts(self) -> list[str]:
        """Final ``user-transcription`` texts: the ones Go publishes."""
        return [
            _text(m.data)
            for m in self.rtvi("user-transcription")
            if isinstance(m.data, dict) and m.data.get("final")
        ]

    def bot_transcripts(self) -> list[str]:
        return [_text(m.data) for m in self.rtvi("bot-transcription")]

    def bot_llm_text(self, include_empty: bool = False) -> list[str]:
        """``bot-llm-text`` tokens joined per response, closed by ``bot-llm-stopped`` as
        Go does; an unclosed tail is left out. Empty responses (tool-call turns) are
        left out unless ``include_empty``."""
        texts: list[str] = []
        buffer = ""
        for m in self.rtvi():
            if m.type == "bot-llm-text":
                buffer += _text(m.data)
            elif m.type == "bot-llm-stopped":
                if buffer or include_empty:
                    texts.append(buffer)
                buffer = ""
        return texts

    def texts(self) -> list[TextEvent]:
        return self.of_type(TextEvent)

    def flushes(self) -> list[TextEvent]:
        return [e for e in self.texts() if e.text == FLUSH_MEDIA]

    def transcriptions(self) -> list[TranscriptionEvent]:
        return self.of_type(TranscriptionEvent)

    def audio_chunks(self) -> list[AudioChunk]:
        return self.of_type(AudioChunk)

    def invalid_messages(self) -> list[InvalidMessage]:
        return self.of_type(InvalidMessage)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return self.of_type(ToolCall)

    @property
    def member_switches(self) -> list[MemberSwitch]:
        return self.of_type(MemberSwitch)

    # Sockets.

    def is_open(self, direction: Direction | str) -> bool:
        events = self.connections(Direction(direction))
        return sum(1 if e.opened else -1 for e in events) > 0

    @property
    def closed(self) -> bool:
        """The output socket was opened and no socket is open any more."""
        events = self.connections()
        return any(e.direction is Direction.OUTPUT for e in events) and (
            sum(1 if e.opened else -1 for e in events) == 0
        )

    def connected_at(self, direction: Direction | str) -> float | None:
        """When the first socket of ``direction`` opened."""
        opened = [e.at for e in self.connections(Direction(direction)) if e.opened]
        return opened[0] if opened else None

    # Caller audio as sent.

    def caller_audio(self) -> list[tuple[float, bytes]]:
        """``(started_at, pcm)`` of everything sent on the input socket, filler included."""
        return [(s.started_at, s.pcm) for s in self.caller_segments]

    def caller_speech_ended_at(self) -> float | None:
        """When the last frame of the last ``AUDIO`` segment (wav or pcm) was sent."""
        ends = [s.ended_at for s in self.caller_segments if s.kind is SegmentKind.AUDIO]
        return ends[-1] if ends and ends[-1] is not None else None

    # Bot audio: as received, and as the media server would have played it.

    @property
    def bot_audio_rate(self) -> int | None:
        """The sample rate of the bot's audio (None before any arrives).

        Raises:
            ManagerSimulatorError: if the runner sent audio at more than one rate.
        """
        rates = sorted({c.sample_rate for c in self.audio_chunks()})
        if len(rates) > 1:
            raise ManagerSimulatorError(f"call {self.call_id}: bot audio came at rates {rates}")
        return rates[0] if rates else None

    def received_bot_audio(self) -> bytes:
        """All bot audio received, in order."""
        return b"".join(c.pcm for c in self.audio_chunks())

    def received_bot_secs(self) -> float:
        return self._received_secs

    def heard_bot_audio(self, until: float | None = None) -> list[tuple[float, bytes]]:
        """``(start_at, pcm)`` of the bot audio the caller heard.

        The media server plays chunks back to back at real time, each starting at
        max(arrival, end of the previous); ``FLUSH_MEDIA`` drops what had not
        played yet. Audio scheduled after ``until`` (default: the simulator's
        hangup, if any) is cut off; audio still queued otherwise counts as heard.
        """
        limit = self.hangup_at if until is None else until
        heard: list[tuple[float, bytes]] = []
        for item in self._playout():
            stop = item.end if item.cut is None else item.cut
            if limit is not None:
                stop = min(stop, limit)
            if stop <= item.start:
                continue
            chunk = item.chunk
            block = SAMPLE_WIDTH * max(chunk.num_channels, 1)
            frames = min(round((stop - item.start) * chunk.sample_rate), len(chunk.pcm) // block)
            if frames > 0:
                heard.append((item.start, chunk.pcm[: frames * block]))
        return heard

    def heard_bot_secs(self, until: float | None = None) -> float:
        rate = self.bot_audio_rate or PHONE_RATE
        return sum(len(pcm) for _, pcm in self.heard_bot_audio(until)) / (rate * SAMPLE_WIDTH)

    def write_wav(self, path: str | Path) -> float:
        """Save the call as a stereo WAV (left: caller as sent, right: bot as heard).

        Each segment is placed at its send or playout time, so the file is true
        to the call when the caller was paced at real time. Returns the
        monotonic time of the file's first sample.
        """
        return _write_call_wav(
            path,
            self.caller_audio(),
            self.heard_bot_audio(),
            bot_sample_rate=self.bot_audio_rate or PHONE_RATE,
        )

    # Waits: all woken by the simulator's notifications, never by polling.

    async def wait(
        self, predicate: Callable[[CallRecord], bool], timeout: float = 10.0, what: str = ""
    ) -> None:
        """Wait until ``predicate(self)``; the TimeoutError names ``what`` and the call."""
        try:
            await self._wait_until(lambda: predicate(self), timeout)
        except TimeoutError:
            recent = ", ".join(_short(e) for e in self.events[-6:]) or "nothing"
            raise TimeoutError(
                f"call {self.call_id}: {what or 'condition'} not met in {timeout}s; "
                f"last events: {recent}"
            ) from None

    async def wait_rtvi(
        self, type: str, count: int = 1, timeout: float = 10.0
    ) -> list[RTVIMessage]:
        await self.wait(lambda c: len(c.rtvi(type)) >= count, timeout, f"{count} x RTVI {type!r}")
        return self.rtvi(type)

    async def wait_bot_audio(self, min_secs: float = 0.0, timeout: float = 10.0) -> bytes:
        """Wait for more than ``min_secs`` of bot audio; returns all received so far."""
        await self.wait(
            lambda c: bool(c.audio_chunks()) and c.received_bot_secs() >= min_secs,
            timeout,
            f"{min_secs}s of bot audio",
        )
        return self.received_bot_audio()

    async def wait_tool_calls(
        self, count: int = 1, name: str | None = None, timeout: float = 10.0
    ) -> list[ToolCall]:
        def matching(c: CallRecord) -> list[ToolCall]:
            return [t for t in c.tool_calls if name is None or t.name == name]

        await self.wait(lambda c: len(matching(c)) >= count, timeout, f"{count} tool call(s)")
        return matching(self)

    async def wait_member_switches(
        self, count: int = 1, timeout: float = 10.0
    ) -> list[MemberSwitch]:
        await self.wait(
            lambda c: len(c.member_switches) >= count, timeout, f"{count} member switch(es)"
        )
        return self.member_switches

    async def wait_connected(
        self, direction: Direction | str = Direction.OUTPUT, timeout: float = 10.0
    ) -> None:
        await self.wait(lambda c: c.is_open(direction), timeout, f"{direction} socket open")

    async def wait_closed(self, timeout: float = 10.0) -> None:
        await self.wait(lambda c: c.closed, timeout, "all sockets closed")

    async def wait_caller_done(self, timeout: float = 10.0) -> None:
        """Wait until the caller's script (and anything queued by ``say``) is sent."""
        await self.wait(lambda c: c.script_done_at is not None, timeout, "caller script sent")

    def _playout(self) -> list[_Playout]:
        """The media server's timeline, replayed from the events."""
        items: list[_Playout] = []
        end = 0.0
        for event in self.events:
            if isinstance(event, AudioChunk):
                start = max(event.at, end)
                end = start + event.secs
                items.append(_Playout(event, start, end))
            elif isinstance(event, TextEvent) and event.text == FLUSH_MEDIA:
                # Chunks are in time order, and a flush cuts everything queued, so
                # walking back stops at the first chunk already over or already cut.
                for item in reversed(items):
                    if item.end <= event.at or item.cut is not None:
                        break
                    item.cut = max(item.start, event.at)
                end = min(end, event.at)
        return items


def _text(data: Any) -> str:
    return str(data.get("text", "")) if isinstance(data, dict) else ""


def _short(event: Event) -> str:
    if isinstance(event, RTVIMessage):
        return f"rtvi:{event.type}"
    if isinstance(event, ConnectionEvent):
        return f"{event.direction}:{'open' if event.opened else 'closed'}"
    if isinstance(event, TextEvent):
        return f"text:{event.text}"
    return type(event).__name__


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


# --- The simulator -----------------------------------------------------------


@dataclass(eq=False)
class _Socket:
    direction: Direction
    ws: web.WebSocketResponse
    request: web.Request
    closed_by: Party | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, data: bytes) -> None:
        async with self.lock:
            await self.ws.send_bytes(data)


@dataclass(eq=False)
class _Line:
    """The live side of one call: its open sockets and the caller audio still to play."""

    queue: deque[Segment]
    sockets: dict[Direction, _Socket] = field(default_factory=dict)
    more_audio: asyncio.Event = field(default_factory=asyncio.Event)
    output_up: asyncio.Event = field(default_factory=asyncio.Event)
    packet_id: int = 0  # Go numbers a call's audio frames from 0


class ManagerSimulator(Simulator):
    """pipecat-manager's side of the wire: caller audio in, bot output recorded, tools answered.

    Args:
        caller: Script for calls not announced with ``expect_call`` (default:
            a silent line).
        tools: Replies by tool name for every call; a call's own ``tools`` win.
            Unlisted tools get ``Reply.ok()``.
        member_switched: Reply to member-switch notifications (default 200
            ``{"status": "ok"}``).
        strict_ids: Answer 404 for call ids not announced with ``expect_call``,
            as Go does for a session it does not know.
        log: Called with one readable line per notable event (the CLI prints them).
    """

    name = "pipecat-manager"

    def __init__(
        self,
        *,
        caller: Caller | None = None,
        tools: Mapping[str, Reply] | None = None,
        member_switched: Reply | None = None,
        strict_ids: bool = False,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.default_caller = caller or Caller()
        self.tools = dict(tools or {})
        self.member_switched = member_switched or Reply.ok()
        self.strict_ids = strict_ids
        self.calls: dict[str, CallRecord] = {}
        self.rejected: list[tuple[float, str, int]] = []  # (at, path, status)
        self._log = log
        self._lines: dict[str, _Line] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{call_id}/ws", self._websocket)
        app.router.add_post("/{call_id}/tools", self._tool_call)
        app.router.add_post("/{call_id}/member-switched", self._member_switched)
        return app

    # Test-facing API.

    def expect_call(
        self,
        call_id: str,
        *,
        caller: Caller | None = None,
        tools: Mapping[str, Reply] | None = None,
        member_switched: Reply | None = None,
    ) -> CallRecord:
        """Announce a call before the runner dials in, with its caller script and replies."""
        if call_id in self.calls:
            raise ManagerSimulatorError(f"call {call_id} is already known; announce it once")
        return self._new_call(call_id, caller, tools, member_switched, expected=True)

    def call(self, call_id: str) -> CallRecord:
        try:
            return self.calls[call_id]
        except KeyError:
            known = ", ".join(self.calls) or "none"
            raise KeyError(f"no call {call_id!r} on the simulator (known: {known})") from None

    async def wait_for(
        self, call_id: str, predicate: Callable[[CallRecord], bool], timeout: float = 10.0
    ) -> CallRecord:
        """Wait until the call exists and ``predicate(call)`` holds; returns the call."""

        def ready() -> bool:
            call = self.calls.get(call_id)
            return call is not None and predicate(call)

        try:
            await self.wait_until(ready, timeout)
        except TimeoutError:
            seen = "known" if call_id in self.calls else "never seen"
            raise TimeoutError(
                f"call {call_id} ({seen}): condition not met in {timeout}s"
            ) from None
        return self.calls[call_id]

    async def wait_call(self, call_id: str, timeout: float = 10.0) -> CallRecord:
        """Wait until the runner has opened a socket for ``call_id``."""
        return await self.wait_for(call_id, lambda c: bool(c.connections()), timeout)

    async def send_text(
        self,
        call_id: str,
        text: str,
        *,
        run_immediately: bool = True,
        audio_response: bool = True,
        message_id: str | None = None,
    ) -> str:
        """Send an RTVI ``send-text`` on the input socket, as Go's ``SendRTVIText`` does.

        Returns the message id.

        Raises:
            ManagerSimulatorError: when the input socket is not open (the runner
                opens it only for calls with ``stt_type``).
        """
        call = self.call(call_id)
        sock = self._lines[call_id].sockets.get(Direction.INPUT)
        if sock is None:
            raise ManagerSimulatorError(
                f"call {call_id}: no open input socket to send text on "
                "(the runner opens it only when stt_type is set)"
            )
        message_id = message_id or str(uuid.uuid4())
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
        await sock.send(frame.SerializeToString())
        at = time.monotonic()
        event = TextSent(
            seq=len(call.events), at=at, message_id=message_id, content=text, data=data
        )
        await self._record(call, event)
        return message_id

    async def say(self, call_id: str, *audio: Segment | Caller) -> None:
        """Queue more caller audio; it replaces the filler silence within one frame."""
        call, line = self.call(call_id), self._lines[call_id]
        for item in audio:
            line.queue.extend(item.segments if isinstance(item, Caller) else [item])
        call.script_done_at = None
        line.more_audio.set()
        await self.notify()

    async def hangup(self, call_id: str, *, abrupt: bool = False) -> None:
        """End the call as Go does: close both sockets.

        ``abrupt`` drops the TCP connections without a websocket close frame
        (what a Go ``Conn.Close()`` does) instead of a normal 1000 close.
        """
        call, line = self.call(call_id), self._lines[call_id]
        if call.hangup_at is None:
            call.hangup_at = time.monotonic()
        await asyncio.gather(*(self._close(s, abrupt) for s in list(line.sockets.values())))
        await self.notify()

    async def close_connections(self) -> None:
        socks = [s for line in self._lines.values() for s in line.sockets.values()]
        await asyncio.gather(*(self._close(s, abrupt=False) for s in socks))
        for task in list(self._tasks):
            task.cancel()

    # Websockets.

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        call_id = request.match_info["call_id"]
        try:
            direction = Direction(request.query.get("direction", ""))
        except ValueError:
            return await self._reject(request, 400, "direction must be 'input' or 'output'")
        call = self._call_for(call_id)
        if call is None:
            return await self._reject(request, 404, f"could not find session {call_id}")
        line = self._lines[call_id]
        # Go's gorilla upgrader negotiates no compression.
        ws = web.WebSocketResponse(compress=False, max_msg_size=0, timeout=2.0)
        await ws.prepare(request)
        sock = _Socket(direction, ws, request)
        line.sockets[direction] = sock  # a reconnect replaces the old socket, as in Go
        if direction is Direction.OUTPUT:
            line.output_up.set()
        opened = ConnectionEvent(
            seq=len(call.events), at=time.monotonic(), direction=direction, opened=True
        )
        await self._record(call, opened)
        sender = None
        if direction is Direction.INPUT:
            sender = asyncio.create_task(self._play_caller(call, line, sock))
        try:
            async for msg in ws:
                if direction is Direction.INPUT:
                    call.ignored_input_messages += 1
                elif msg.type is WSMsgType.BINARY:
                    await self._on_output(call, sock, msg.data)
                else:
                    call.ignored_text_messages += 1
        finally:
            if sender is not None:
                sender.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sender
            if line.sockets.get(direction) is sock:
                del line.sockets[direction]
            closed = ConnectionEvent(
                seq=len(call.events),
                at=time.monotonic(),
                direction=direction,
                opened=False,
                closed_by=sock.closed_by or Party.RUNNER,
                close_code=ws.close_code,
            )
            await self._record(call, closed)
        return ws

    async def _close(self, sock: _Socket, abrupt: bool) -> None:
        if sock.closed_by is None:
            sock.closed_by = Party.MANAGER
        transport = sock.request.transport
        if abrupt and transport is not None:
            transport.close()
        else:
            await sock.ws.close(code=1000)

    async def _on_output(self, call: CallRecord, sock: _Socket, data: bytes) -> None:
        at, seq = time.monotonic(), len(call.events)
        try:
            frame = _proto.Frame.FromString(data)
        except DecodeError as e:
            reason = f"bad protobuf: {e}"
            await self._record(call, InvalidMessage(seq=seq, at=at, reason=reason, raw=data))
            return
        kind = frame.WhichOneof("frame")
        event: Event
        if kind == "audio":
            audio = frame.audio
            if audio.num_channels != 1:
                # Go stops reading this socket; closing it makes that visible.
                reason = f"only mono audio is supported, got num_channels={audio.num_channels}"
                await self._record(call, InvalidMessage(seq=seq, at=at, reason=reason, raw=data))
                sock.closed_by = Party.MANAGER
                await sock.ws.close(code=1003, message=reason.encode())
                return
            event = AudioChunk(
                seq=seq,
                at=at,
                pcm=audio.audio,
                sample_rate=audio.sample_rate,
                num_channels=audio.num_channels,
                frame_id=audio.id,
            )
        elif kind == "text":
            event = TextEvent(seq=seq, at=at, text=frame.text.text)
        elif kind == "transcription":
            t = frame.transcription
            event = TranscriptionEvent(
                seq=seq, at=at, text=t.text, user_id=t.user_id, timestamp=t.timestamp
            )
        elif kind == "message":
            event = _message_event(seq, at, frame.message.data, data)
        elif kind == "interruption":
            event = InterruptionEvent(seq=seq, at=at)
        else:
            event = InvalidMessage(seq=seq, at=at, reason="frame with no content", raw=data)
        await self._record(call, event)

    # The caller.

    async def _play_caller(self, call: CallRecord, line: _Line, sock: _Socket) -> None:
        """Send the call's script, then what ``Then`` says, until the socket goes."""
        caller = call.caller
        if caller.start is Start.AFTER_OUTPUT:
            await line.output_up.wait()
        pacer = _Pacer()
        filler: SentSegment | None = None
        try:
            while line.sockets.get(Direction.INPUT) is sock and sock.closed_by is None:
                if line.queue:
                    filler = None
                    await self._send_segment(call, line, sock, line.queue.popleft(), pacer)
                    continue
                if call.script_done_at is None:
                    call.script_done_at = time.monotonic()
                    await self._record_caller(call, "caller script sent")
                if caller.then is Then.SILENCE:
                    if filler is None:
                        filler = SentSegment("filler", SegmentKind.FILLER, time.monotonic())
                        call.caller_segments.append(filler)
                    await self._send_frame(line, sock, bytes(FRAME_BYTES), 1.0, pacer, filler)
                elif caller.then is Then.STOP:
                    line.more_audio.clear()
                    if not line.queue:
                        await line.more_audio.wait()
                else:
                    # Not awaited here: hanging up closes this socket and cancels this task.
                    self._spawn(self.hangup(call.call_id))
                    return
        except ConnectionError:
            pass  # the runner went away; the websocket handler records the close

    async def _send_segment(
        self, call: CallRecord, line: _Line, sock: _Socket, segment: Segment, pacer: _Pacer
    ) -> None:
        sent = SentSegment(segment.label, segment.kind, time.monotonic())
        call.caller_segments.append(sent)
        await self._record_caller(call, f"caller: {segment.label} ({segment.secs:.2f}s)")
        for offset in range(0, len(segment.pcm), FRAME_BYTES):
            # The last frame is padded with silence: Go's frames are all 20 ms.
            pcm = segment.pcm[offset : offset + FRAME_BYTES].ljust(FRAME_BYTES, b"\0")
            await self._send_frame(line, sock, pcm, call.caller.pace, pacer, sent)
        sent.ended_at = sent.ended_at or sent.started_at
        await self.notify()

    async def _send_frame(
        self, line: _Line, sock: _Socket, pcm: bytes, pace: float, pacer: _Pacer, sent: SentSegment
    ) -> None:
        await pacer.wait(FRAME_SECS / pace if pace else 0.0)
        audio = _proto.AudioRawFrame(
            id=line.packet_id, audio=pcm, sample_rate=PHONE_RATE, num_channels=1
        )
        now = time.monotonic()
        await sock.send(_proto.Frame(audio=audio).SerializeToString())
        line.packet_id += 1
        if sent.frames == 0:
            sent.started_at = now
        sent.frames += 1
        sent.audio += pcm
        sent.ended_at = now

    # HTTP endpoints.

    async def _tool_call(self, request: web.Request) -> web.StreamResponse:
        call = self._call_for(request.match_info["call_id"])
        if call is None:
            return await self._reject(request, 404, "could not find session")
        raw = await request.read()
        body, error = _json_object(raw)
        parts = body if isinstance(body, dict) else {}
        function = parts.get("function")
        name, arguments = "", None
        if error is None:
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                error = "body must have function.name (a string)"
            else:
                name = function["name"]
                arguments, error = _arguments(function.get("arguments"))
        tool_call_id = str(parts.get("id", ""))
        reply = call.tools.get(name) or self.tools.get(name) or Reply.ok()
        if error is not None:
            reply = Reply.error(400, error)
        event = ToolCall(
            seq=len(call.events),
            at=time.monotonic(),
            tool_call_id=tool_call_id,
            name=name,
            arguments=arguments,
            body=body,
            raw_body=raw,
            reply_status=reply.status,
            error=error,
        )
        await self._record(call, event)
        default = {
            "tool_call_id": tool_call_id,
            "result": "success",
            "message": "ok",
            "resource_type": "",
            "resource_id": "",
        }
        return await _answer(reply, default)

    async def _member_switched(self, request: web.Request) -> web.StreamResponse:
        call = self._call_for(request.match_info["call_id"])
        if call is None:
            return await self._reject(request, 404, "could not find session")
        raw = await request.read()
        body, error = _json_object(raw)
        parts = body if isinstance(body, dict) else {}
        transition = parts.get("transition_function_name")
        from_member, to_member = parts.get("from_member"), parts.get("to_member")
        well_formed = (
            isinstance(transition, str)
            and isinstance(from_member, dict)
            and isinstance(to_member, dict)
        )
        if error is None and not well_formed:
            error = (
                "body must have transition_function_name (a string), "
                "from_member and to_member (objects)"
            )
        reply = call.member_switched or self.member_switched
        if error is not None:
            reply = Reply.error(400, error)
        event = MemberSwitch(
            seq=len(call.events),
            at=time.monotonic(),
            transition_function_name=transition if isinstance(transition, str) else "",
            from_member=from_member if isinstance(from_member, dict) else {},
            to_member=to_member if isinstance(to_member, dict) else {},
            body=body,
            raw_body=raw,
            reply_status=reply.status,
            error=error,
        )
        await self._record(call, event)
        return await _answer(reply, {"status": "ok"})

    # Plumbing.

    def _new_call(
        self,
        call_id: str,
        caller: Caller | None,
        tools: Mapping[str, Reply] | None,
        member_switched: Reply | None,
        *,
        expected: bool,
    ) -> CallRecord:
        call = CallRecord(
            call_id,
            caller=caller or self.default_caller,
            tools=tools or {},
            member_switched=member_switched,
            expected=expected,
            wait_until=self.wait_until,
        )
        self.calls[call_id] = call
        self._lines[call_id] = _Line(deque(call.caller.segments))
        return call

    def _call_for(self, call_id: str) -> CallRecord | None:
        """The record for ``call_id``, created on first contact unless ``strict_ids``."""
        call = self.calls.get(call_id)
        if call is None and not self.strict_ids:
            call = self._new_call(call_id, None, None, None, expected=False)
        return call

    async def _reject(self, request: web.Request, status: int, error: str) -> web.Response:
        self.rejected.append((time.monotonic(), request.path_qs, status))
        self._say(f"rejected {request.method} {request.path_qs}: {status} {error}")
        await self.notify()
        return web.json_response({"error": error}, status=status)

    async def _record(self, call: CallRecord, event: Event) -> None:
        previous_audio_at = call.last_bot_audio_at
        call.add(event)
        if self._log is not None:
            line = _describe(call, event, previous_audio_at)
            if line:
                self._say(f"[{call.call_id}] {line}")
        await self.notify()

    async def _record_caller(self, call: CallRecord, line: str) -> None:
        self._say(f"[{call.call_id}] {line}")
        await self.notify()

    def _say(self, line: str) -> None:
        if self._log is not None:
            self._log(f"{time.strftime('%H:%M:%S')} {line}")

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


class _Pacer:
    """Sends frames on an absolute schedule, so pacing does not drift with the event loop."""

    def __init__(self) -> None:
        self._next: float | None = None

    async def wait(self, step: float) -> None:
        now = time.monotonic()
        # After a pause (``Then.STOP``) or a stall, restart the schedule instead of bursting.
        if self._next is None or now - self._next > 0.1:
            self._next = now
        delay = self._next - now
        await asyncio.sleep(max(delay, 0.0))
        self._next += step


async def _answer(reply: Reply, default_body: Any) -> web.Response:
    if reply.delay > 0:
        await asyncio.sleep(reply.delay)  # scripted latency, e.g. to hit the runner's timeout
    return reply.response(default_body)


def _json_object(raw: bytes) -> tuple[Any, str | None]:
    try:
        body = json.loads(raw)
    except ValueError as e:
        return None, f"body is not JSON: {e}"
    if not isinstance(body, dict):
        return body, f"body must be a JSON object, got {type(body).__name__}"
    return body, None


def _arguments(value: Any) -> tuple[Any, str | None]:
    """Parse ``function.arguments``, which the contract makes a JSON-encoded string."""
    if not isinstance(value, str):
        return value, (
            f"function.arguments must be a JSON-encoded string, got {type(value).__name__}"
        )
    try:
        return json.loads(value), None
    except ValueError as e:
        return None, f"function.arguments is not valid JSON: {e}"


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


def _describe(call: CallRecord, event: Event, previous_audio_at: float | None) -> str | None:
    """One log line for an event worth showing live, or None."""
    if isinstance(event, ConnectionEvent):
        if event.opened:
            return f"{event.direction} socket connected"
        return f"{event.direction} socket closed by {event.closed_by} (code {event.close_code})"
    if isinstance(event, AudioChunk):
        # Only the start of each burst: the chunks themselves are many.
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
        return (
            f"user: {_text(m.data)!r}" if isinstance(m.data, dict) and m.data.get("final") else None
        )
    if m.type == "bot-transcription":
        return f"bot: {_text(m.data)!r}"
    if m.type == "bot-llm-stopped":
        texts = call.bot_llm_text(include_empty=True)
        return f"bot LLM: {texts[-1]!r}" if texts and texts[-1] else "bot LLM: (no text)"
    if m.type == "error":
        return f"error: {m.data}"
    if m.type in (
        "user-started-speaking",
        "user-stopped-speaking",
        "bot-started-speaking",
        "bot-stopped-speaking",
    ):
        return m.type.replace("-", " ")
    return None


# --- Command line --------------------------------------------------------------


def _parse_args(argv: Iterable[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.manager",
        description="Serve a simulator of pipecat-manager's wire (not the Go service).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--caller", type=Path, help="WAV the caller plays on every call")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--realtime", action="store_true", help="pace caller audio at real time")
    pace.add_argument("--speed", type=float, help="caller audio N times real time (0: unpaced)")
    parser.add_argument("--start", choices=[s.value for s in Start], default=Start.AFTER_OUTPUT)
    parser.add_argument("--then", choices=[t.value for t in Then], default=Then.SILENCE)
    parser.add_argument("--record", type=Path, help="directory to save each call as <id>.wav")
    return parser.parse_args(list(argv) if argv is not None else None)


async def _serve(args: argparse.Namespace) -> None:
    segments = [Caller.wav(args.caller)] if args.caller else []
    caller = Caller(
        *segments,
        realtime=args.speed is None,
        speed=1.0 if args.speed is None else args.speed,
        start=args.start,
        then=args.then,
    )
    sim = ManagerSimulator(caller=caller, log=lambda line: print(line, flush=True))
    await sim.start(args.host, args.port)
    serving = asyncio.current_task()
    if serving is not None:  # SIGTERM stops it like Ctrl-C does
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, serving.cancel)
    print(f"pipecat-manager simulator on {sim.address} (PIPECATCALL_ADDRESS={sim.address})")
    saved: set[str] = set()
    try:
        while True:
            if args.record is None:
                await asyncio.Event().wait()
            with contextlib.suppress(TimeoutError):
                await sim.wait_until(
                    lambda: any(c.closed and i not in saved for i, c in sim.calls.items()), 3600
                )
            for call_id, call in list(sim.calls.items()):
                if call.closed and call_id not in saved:
                    saved.add(call_id)
                    args.record.mkdir(parents=True, exist_ok=True)
                    path = args.record / f"{call_id}.wav"
                    call.write_wav(path)
                    print(f"[{call_id}] saved {path}", flush=True)
    finally:
        await sim.stop()


def main(argv: Iterable[str] | None = None) -> None:
    args = _parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
        asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
