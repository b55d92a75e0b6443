"""What the simulator records about one pipecat-manager call: ``CallRecord``.

A ``CallRecord`` keeps the call's events in order (``events.py``) and the
caller audio as sent (``SentSegment``), and offers typed views of them: RTVI
messages and transcripts, tool calls, sockets, bot audio as received and as
the media server would have played it, and the call as a stereo WAV. Its waits
are woken by the simulator's notifications, never by polling. It sends
nothing and serves nothing: ``line.py`` and ``manager.py`` do that.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from simulators.caller import Caller, SegmentKind, SentSegment
from simulators.endpoints import Reply
from simulators.events import (
    FLUSH_MEDIA,
    RTVI_LABEL,
    AudioChunk,
    ConnectionEvent,
    Direction,
    Event,
    InvalidMessage,
    MemberSwitch,
    RTVIMessage,
    TextEvent,
    ToolCall,
    TranscriptionEvent,
)
from simulators.wav import PHONE_RATE, SAMPLE_WIDTH, write_call_wav

_Ev = TypeVar("_Ev", bound=Event)


class ManagerSimulatorError(RuntimeError):
    """A test asked the simulator for something the call's state does not allow."""


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
        return [m.text for m in self.rtvi("user-transcription") if m.final]

    def bot_transcripts(self) -> list[str]:
        return [m.text for m in self.rtvi("bot-transcription")]

    def bot_llm_text(self, include_empty: bool = False) -> list[str]:
        """``bot-llm-text`` tokens joined per response, closed by ``bot-llm-stopped`` as
        Go does; an unclosed tail is left out. Empty responses (tool-call turns) are
        left out unless ``include_empty``."""
        texts: list[str] = []
        buffer = ""
        for m in self.rtvi():
            if m.type == "bot-llm-text":
                buffer += m.text
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
        return write_call_wav(
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


def _short(event: Event) -> str:
    if isinstance(event, RTVIMessage):
        return f"rtvi:{event.type}"
    if isinstance(event, ConnectionEvent):
        return f"{event.direction}:{'open' if event.opened else 'closed'}"
    if isinstance(event, TextEvent):
        return f"text:{event.text}"
    return type(event).__name__
