"""The live side of one simulated pipecat-manager call: its two websockets.

A ``Line`` holds a call's open sockets and the caller audio still to play. On
the input socket it plays the ``Caller`` script as 20 ms frames, then what
``Then`` says, and sends RTVI text on request; on the output socket it records
every frame the runner sends, closing the socket where Go would stop reading
it. Everything it sees goes into the call's ``CallRecord`` (``record``), is
logged, and wakes the simulator's waiters. It holds no routing and no HTTP:
``manager.py`` finds the line for a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from simulators import wire
from simulators.caller import (
    FRAME_BYTES,
    FRAME_SECS,
    Caller,
    Pacer,
    Segment,
    SegmentKind,
    SentSegment,
    Start,
    Then,
)
from simulators.events import ConnectionEvent, Direction, Event, Party, TextSent, describe
from simulators.record import CallRecord, ManagerSimulatorError


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


class Line:
    """One call's sockets and caller audio.

    Args:
        call: Where everything seen on the line is recorded.
        notify: Wakes the simulator's waiters.
        say: Logs one line, or None when nothing is logged.
    """

    def __init__(
        self,
        call: CallRecord,
        *,
        notify: Callable[[], Awaitable[None]],
        say: Callable[[str], None] | None,
    ) -> None:
        self.call = call
        self.queue: deque[Segment] = deque(call.caller.segments)
        self.sockets: dict[Direction, _Socket] = {}
        self._notify = notify
        self._say = say
        self._more_audio = asyncio.Event()
        self._output_up = asyncio.Event()
        self._packet_id = 0  # Go numbers a call's audio frames from 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def record(self, event: Event) -> None:
        """Add ``event`` to the call's record, log it, and wake the waiters."""
        previous_audio_at = self.call.last_bot_audio_at
        self.call.add(event)
        if self._say is not None:
            line = describe(self.call, event, previous_audio_at)
            if line:
                self._say(f"[{self.call.call_id}] {line}")
        await self._notify()

    async def serve(self, direction: Direction, request: web.Request) -> web.WebSocketResponse:
        """Hold one socket of the call open until either side closes it."""
        call = self.call
        # Go's gorilla upgrader negotiates no compression.
        ws = web.WebSocketResponse(compress=False, max_msg_size=0, timeout=2.0)
        await ws.prepare(request)
        sock = _Socket(direction, ws, request)
        self.sockets[direction] = sock  # a reconnect replaces the old socket, as in Go
        if direction is Direction.OUTPUT:
            self._output_up.set()
        opened = ConnectionEvent(
            seq=len(call.events), at=time.monotonic(), direction=direction, opened=True
        )
        await self.record(opened)
        sender = None
        if direction is Direction.INPUT:
            sender = asyncio.create_task(self._play_caller(sock))
        try:
            async for msg in ws:
                if direction is Direction.INPUT:
                    call.ignored_input_messages += 1
                elif msg.type is WSMsgType.BINARY:
                    await self._on_output(sock, msg.data)
                else:
                    call.ignored_text_messages += 1
        finally:
            if sender is not None:
                sender.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sender
            if self.sockets.get(direction) is sock:
                del self.sockets[direction]
            closed = ConnectionEvent(
                seq=len(call.events),
                at=time.monotonic(),
                direction=direction,
                opened=False,
                closed_by=sock.closed_by or Party.RUNNER,
                close_code=ws.close_code,
            )
            await self.record(closed)
        return ws

    async def send_text(
        self, text: str, *, run_immediately: bool, audio_response: bool, message_id: str | None
    ) -> str:
        """Send an RTVI ``send-text`` on the input socket; returns the message id.

        Raises:
            ManagerSimulatorError: when the input socket is not open.
        """
        sock = self.sockets.get(Direction.INPUT)
        if sock is None:
            raise ManagerSimulatorError(
                f"call {self.call.call_id}: no open input socket to send text on "
                "(the runner opens it only when stt_type is set)"
            )
        message_id = message_id or str(uuid.uuid4())
        data, frame = wire.send_text(
            message_id, text, run_immediately=run_immediately, audio_response=audio_response
        )
        await sock.send(frame)
        event = TextSent(
            seq=len(self.call.events),
            at=time.monotonic(),
            message_id=message_id,
            content=text,
            data=data,
        )
        await self.record(event)
        return message_id

    async def say(self, *audio: Segment | Caller) -> None:
        """Queue more caller audio; it replaces the filler silence within one frame."""
        for item in audio:
            self.queue.extend(item.segments if isinstance(item, Caller) else [item])
        self.call.script_done_at = None
        self._more_audio.set()
        await self._notify()

    async def hangup(self, *, abrupt: bool = False) -> None:
        """Close both sockets; ``abrupt`` drops the TCP connections without a close frame."""
        if self.call.hangup_at is None:
            self.call.hangup_at = time.monotonic()
        await asyncio.gather(*(self._close(s, abrupt) for s in list(self.sockets.values())))
        await self._notify()

    async def close(self) -> None:
        """Close the open sockets normally and stop any hangup under way (server shutdown)."""
        await asyncio.gather(*(self._close(s, abrupt=False) for s in list(self.sockets.values())))
        for task in list(self._tasks):
            task.cancel()

    async def _close(self, sock: _Socket, abrupt: bool) -> None:
        if sock.closed_by is None:
            sock.closed_by = Party.MANAGER
        transport = sock.request.transport
        if abrupt and transport is not None:
            transport.close()
        else:
            await sock.ws.close(code=1000)

    async def _on_output(self, sock: _Socket, data: bytes) -> None:
        event, close_reason = wire.read_output(data, seq=len(self.call.events), at=time.monotonic())
        await self.record(event)
        if close_reason is not None:
            # Go stops reading this socket; closing it makes that visible.
            sock.closed_by = Party.MANAGER
            await sock.ws.close(code=1003, message=close_reason.encode())

    # The caller.

    async def _play_caller(self, sock: _Socket) -> None:
        """Send the call's script, then what ``Then`` says, until the socket goes."""
        call, caller = self.call, self.call.caller
        if caller.start is Start.AFTER_OUTPUT:
            await self._output_up.wait()
        pacer = Pacer()
        filler: SentSegment | None = None
        try:
            while self.sockets.get(Direction.INPUT) is sock and sock.closed_by is None:
                if self.queue:
                    filler = None
                    await self._send_segment(sock, self.queue.popleft(), pacer)
                    continue
                if call.script_done_at is None:
                    call.script_done_at = time.monotonic()
                    await self._note("caller script sent")
                if caller.then is Then.SILENCE:
                    if filler is None:
                        filler = SentSegment("filler", SegmentKind.FILLER, time.monotonic())
                        call.caller_segments.append(filler)
                    await self._send_frame(sock, bytes(FRAME_BYTES), 1.0, pacer, filler)
                elif caller.then is Then.STOP:
                    self._more_audio.clear()
                    if not self.queue:
                        await self._more_audio.wait()
                else:
                    # Not awaited here: hanging up closes this socket and cancels this task.
                    self._spawn(self.hangup())
                    return
        except ConnectionError:
            pass  # the runner went away; ``serve`` records the close

    async def _send_segment(self, sock: _Socket, segment: Segment, pacer: Pacer) -> None:
        sent = SentSegment(segment.label, segment.kind, time.monotonic())
        self.call.caller_segments.append(sent)
        await self._note(f"caller: {segment.label} ({segment.secs:.2f}s)")
        for offset in range(0, len(segment.pcm), FRAME_BYTES):
            # The last frame is padded with silence: Go's frames are all 20 ms.
            pcm = segment.pcm[offset : offset + FRAME_BYTES].ljust(FRAME_BYTES, b"\0")
            await self._send_frame(sock, pcm, self.call.caller.pace, pacer, sent)
        sent.ended_at = sent.ended_at or sent.started_at
        await self._notify()

    async def _send_frame(
        self, sock: _Socket, pcm: bytes, pace: float, pacer: Pacer, sent: SentSegment
    ) -> None:
        await pacer.wait(FRAME_SECS / pace if pace else 0.0)
        frame = wire.caller_audio(pcm, self._packet_id)
        now = time.monotonic()
        await sock.send(frame)
        self._packet_id += 1
        sent.add_frame(pcm, now)

    async def _note(self, text: str) -> None:
        if self._say is not None:
            self._say(f"[{self.call.call_id}] {text}")
        await self._notify()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
