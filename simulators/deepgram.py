"""A simulated Deepgram live speech-to-text service: scripted transcripts, not recognition.

``DeepgramSimulator`` serves Deepgram's live-transcription websocket
(``/v1/listen``, the path the deepgram SDK appends to its base URL) on
loopback, so pipecat's real ``DeepgramSTTService(base_url=sim.ws_url)`` talks
to it unchanged. It does not recognise speech. It finds utterances in the
caller's linear16 audio by loudness alone (``UtteranceDetector``) and answers
the k-th utterance with the k-th scripted transcript, in Deepgram's message
shapes: interim and final ``Results``, ``SpeechStarted`` when ``vad_events``
is asked for, ``UtteranceEnd`` when ``utterance_end_ms`` is, and ``Metadata``
on ``CloseStream``. Time is measured in audio received, not wall clock, so
results do not depend on how fast a test feeds audio. Only mono ``linear16``
audio is analysed; audio in any other encoding is counted but never answered.

A test can drop the sockets mid-call (``close_connections``, as Deepgram does
when it closes a stream) and keep the next handshakes waiting, all of them or
one language's (``hold_handshakes`` until ``release_handshakes``), so a client's
socket stays down for as long as the test needs; ``handshakes`` says when each
one came.
It can also send each final transcript ``final_delay`` seconds late, as a
recogniser that has fallen behind does.

It holds no other Deepgram API (no pre-recorded ``/v1/listen`` POST, no TTS).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web
from multidict import MultiDict

from simulators.audio import rms_s16le
from simulators.server import ProviderSimulator, print_event, serve_until_interrupted

LISTEN_PATH = "/v1/listen"

#: Loudness (RMS, 16-bit scale) above which a 10 ms window counts as speech.
DEFAULT_SPEECH_RMS = 500.0

#: Silence that ends an utterance. A client's ``endpointing`` may lengthen it, not shorten it.
DEFAULT_SILENCE_MS = 300

#: Audio between two interim results while an utterance goes on.
INTERIM_INTERVAL_S = 0.25

_WINDOW_S = 0.01
_MODEL_INFO = {"name": "general-nova-3", "version": "2025-01-01.0", "arch": "nova-3"}


@dataclass(frozen=True)
class SpeechBegan:
    """The detector heard speech start at ``at`` seconds into the stream."""

    at: float


@dataclass(frozen=True)
class SpeechContinues:
    """Another interim interval of one utterance has gone by."""

    start: float
    now: float


@dataclass(frozen=True)
class SpeechEnded:
    """An utterance ran from ``start`` to ``end`` (its last loud window)."""

    start: float
    end: float


DetectorEvent = SpeechBegan | SpeechContinues | SpeechEnded


class UtteranceDetector:
    """Splits a stream of s16le mono audio into utterances by loudness.

    An utterance begins at the first 10 ms window louder than ``speech_rms``
    and ends once ``silence_s`` of quiet audio has followed its last loud
    window, or when ``finish`` is called (Deepgram's Finalize/CloseStream).
    """

    def __init__(
        self,
        sample_rate: int,
        speech_rms: float = DEFAULT_SPEECH_RMS,
        silence_s: float | None = DEFAULT_SILENCE_MS / 1000,
    ) -> None:
        self._window_bytes = max(2, int(sample_rate * _WINDOW_S)) * 2
        self._window_s = self._window_bytes / 2 / sample_rate
        self._speech_rms = speech_rms
        self._silence_s = silence_s
        self._pending = b""
        self._elapsed = 0.0
        self._start: float | None = None
        self._last_loud = 0.0
        self._next_interim = 0.0

    @property
    def elapsed(self) -> float:
        """Seconds of audio analysed so far."""
        return self._elapsed

    @property
    def in_speech(self) -> bool:
        return self._start is not None

    def feed(self, pcm: bytes) -> list[DetectorEvent]:
        """Analyse more audio and return what happened in it, in order."""
        self._pending += pcm
        events: list[DetectorEvent] = []
        while len(self._pending) >= self._window_bytes:
            window = self._pending[: self._window_bytes]
            self._pending = self._pending[self._window_bytes :]
            events.extend(self._analyse(window))
        return events

    def finish(self) -> SpeechEnded | None:
        """End the utterance in progress now, if there is one."""
        if self._start is None:
            return None
        ended = SpeechEnded(self._start, max(self._last_loud, self._start))
        self._start = None
        return ended

    def _analyse(self, window: bytes) -> list[DetectorEvent]:
        window_start = self._elapsed
        self._elapsed += self._window_s
        loud = rms_s16le(window) >= self._speech_rms
        if self._start is None:
            if not loud:
                return []
            self._start, self._last_loud = window_start, self._elapsed
            self._next_interim = window_start + INTERIM_INTERVAL_S
            return [SpeechBegan(window_start)]
        if loud:
            self._last_loud = self._elapsed
        elif self._silence_s is not None and self._elapsed - self._last_loud >= self._silence_s:
            ended = self.finish()
            return [ended] if ended else []
        if self._elapsed >= self._next_interim:
            self._next_interim += INTERIM_INTERVAL_S
            return [SpeechContinues(self._start, self._elapsed)]
        return []


class TranscriptScript:
    """The transcripts still to be given, in order; shared by every connection."""

    def __init__(self, transcripts: list[str] | None = None) -> None:
        self._queue: deque[str] = deque(transcripts or [])

    def push(self, *texts: str) -> None:
        self._queue.extend(texts)

    def peek(self) -> str | None:
        """The transcript the next utterance will get, without using it up."""
        return self._queue[0] if self._queue else None

    def take(self) -> str | None:
        """Use up and return the next transcript; None once the script has run out."""
        return self._queue.popleft() if self._queue else None

    @property
    def remaining(self) -> list[str]:
        return list(self._queue)


@dataclass
class ListenConnection:
    """What one client connection to ``/v1/listen`` sent and was sent."""

    query: MultiDict[str]
    api_key: str | None
    audio_bytes: int = 0
    audio_messages: list[int] = field(default_factory=list)  # the size of each, in bytes
    control_messages: list[str] = field(default_factory=list)
    transcripts_sent: list[str] = field(default_factory=list)
    interim_transcripts_sent: list[str] = field(default_factory=list)
    unanswered_utterances: int = 0
    closed: bool = False

    @property
    def sample_rate(self) -> int:
        return int(self.query.get("sample_rate", "16000"))


class DeepgramSimulator(ProviderSimulator[ListenConnection]):
    """Deepgram live STT on loopback, answering utterances from a script.

    The script is shared by every connection, so a client that reconnects
    carries on where it left off. When it runs out, further utterances get no
    answer and are counted in ``unanswered_utterances``.
    """

    name = "deepgram"

    def __init__(
        self,
        transcripts: list[str] | None = None,
        *,
        interim: bool = True,
        final_delay: float = 0.0,
        speech_rms: float = DEFAULT_SPEECH_RMS,
        silence_ms: int = DEFAULT_SILENCE_MS,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(on_event=on_event)
        self.script = TranscriptScript(transcripts)
        self.interim = interim
        #: Seconds a final transcript comes after its utterance ends, as from a
        #: recogniser that has fallen behind; interim results are not held back.
        self.final_delay = final_delay
        self.speech_rms = speech_rms
        self.silence_ms = silence_ms
        #: When each handshake arrived (``time.monotonic()``), held and refused ones included.
        self.handshakes: list[float] = []
        #: Handshakes waiting while ``hold_handshakes`` is in force.
        self.handshakes_waiting = 0
        self._admitting = asyncio.Event()
        self._admitting.set()
        self._held_language: str | None = None

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(LISTEN_PATH, self._handle_listen)
        return app

    def hold_handshakes(self, language: str | None = None) -> None:
        """Keep every new connection (or only those for ``language``) waiting in its
        handshake until ``release_handshakes``."""
        self._held_language = language
        self._admitting.clear()

    def release_handshakes(self) -> None:
        """Let the held handshakes, and every later one, complete."""
        self._admitting.set()

    def push_transcripts(self, *texts: str) -> None:
        """Append transcripts to the script, for utterances still to come."""
        self.script.push(*texts)

    @property
    def remaining_transcripts(self) -> list[str]:
        return self.script.remaining

    @property
    def transcripts_sent(self) -> list[str]:
        """Every final transcript sent, on any connection, in order."""
        return [text for conn in self.connections for text in conn.transcripts_sent]

    @property
    def unanswered_utterances(self) -> int:
        return sum(conn.unanswered_utterances for conn in self.connections)

    @property
    def audio_bytes_received(self) -> int:
        return sum(conn.audio_bytes for conn in self.connections)

    async def _handle_listen(self, request: web.Request) -> web.StreamResponse:
        self.handshakes.append(time.monotonic())
        held = self._held_language in (None, request.query.get("language"))
        if not self._admitting.is_set() and held:
            self.handshakes_waiting += 1
            await self.notify()
            try:
                await self._admitting.wait()
            finally:
                self.handshakes_waiting -= 1
        refusal = self.refusal()
        if refusal is not None:
            return refusal
        # No permessage-deflate: PCM barely compresses, and a runner should not
        # be measured paying to compress it for a simulator.
        ws = web.WebSocketResponse(compress=False, max_msg_size=0)
        await ws.prepare(request)
        conn = ListenConnection(MultiDict(request.query), _api_key(request))
        async with self.connection(ws, conn, f"connection opened: {request.query_string}"):
            await _ListenSession(self, conn, ws, self.report).run()
        return ws


class _ListenSession:
    """One connection's conversation: audio in, Deepgram messages out."""

    def __init__(
        self,
        sim: DeepgramSimulator,
        conn: ListenConnection,
        ws: web.WebSocketResponse,
        report: Callable[[str], None],
    ) -> None:
        self._sim = sim
        self._script = sim.script
        self._report = report
        self._conn = conn
        self._ws = ws
        self._request_id = str(uuid.uuid4())
        self._sha = hashlib.sha256()
        query = conn.query
        self._interim = sim.interim and query.get("interim_results", "false") == "true"
        self._vad_events = query.get("vad_events", "false") == "true"
        self._utterance_end = "utterance_end_ms" in query
        self._detector = UtteranceDetector(
            conn.sample_rate, sim.speech_rms, _silence_seconds(sim.silence_ms, query)
        )
        self._interims_this_utterance = 0
        self._late_answers: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        try:
            async for message in self._ws:
                if message.type == WSMsgType.BINARY:
                    await self._on_audio(message.data)
                elif message.type == WSMsgType.TEXT and await self._on_control(message.data):
                    return
        finally:
            for task in self._late_answers:
                task.cancel()

    async def _on_audio(self, pcm: bytes) -> None:
        self._conn.audio_bytes += len(pcm)
        self._conn.audio_messages.append(len(pcm))
        self._sha.update(pcm)
        if self._conn.query.get("encoding", "linear16") != "linear16":
            await self._sim.notify()
            return  # only linear16 is analysed; other audio is counted, never answered
        for event in self._detector.feed(pcm):
            await self._on_detector_event(event)
        await self._sim.notify()

    async def _on_control(self, text: str) -> bool:
        """Handle a control message; True when the stream is over."""
        kind = str(json.loads(text).get("type", ""))
        self._conn.control_messages.append(kind)
        self._report(f"control message: {kind}")
        await self._sim.notify()
        if kind == "Finalize":
            ended = self._detector.finish()
            if ended is None:
                await self._send_results("", [], self._detector.elapsed, 0.0, True, False, True)
            else:
                await self._answer(ended, from_finalize=True)
        elif kind == "CloseStream":
            ended = self._detector.finish()
            if ended is not None:
                await self._answer(ended, from_finalize=False)
            await self._send(self._metadata())
            await self._ws.close()
            return True
        return False

    async def _on_detector_event(self, event: DetectorEvent) -> None:
        if isinstance(event, SpeechBegan):
            self._interims_this_utterance = 0
            if self._vad_events:
                await self._send({"type": "SpeechStarted", "channel": [0], "timestamp": event.at})
        elif isinstance(event, SpeechContinues):
            await self._send_interim(event)
        else:
            await self._answer(event, from_finalize=False)

    async def _send_interim(self, event: SpeechContinues) -> None:
        upcoming = self._script.peek()
        if not self._interim or upcoming is None:
            return
        self._interims_this_utterance += 1
        words = upcoming.split()[: self._interims_this_utterance]
        partial = " ".join(words)
        self._conn.interim_transcripts_sent.append(partial)
        duration = event.now - event.start
        await self._send_results(partial, words, event.start, duration, False, False, False)

    async def _answer(self, ended: SpeechEnded, from_finalize: bool) -> None:
        if self._sim.final_delay > 0:
            task = asyncio.create_task(self._answer_late(ended, from_finalize))
            self._late_answers.add(task)
            task.add_done_callback(self._late_answers.discard)
            return
        await self._answer_now(ended, from_finalize)

    async def _answer_late(self, ended: SpeechEnded, from_finalize: bool) -> None:
        await asyncio.sleep(self._sim.final_delay)
        await self._answer_now(ended, from_finalize)

    async def _answer_now(self, ended: SpeechEnded, from_finalize: bool) -> None:
        transcript = self._script.take()
        if transcript is None:
            self._conn.unanswered_utterances += 1
            self._report("utterance went unanswered: the script is empty")
            return
        duration = max(ended.end - ended.start, 0.01)
        words = transcript.split()
        await self._send_results(
            transcript, words, ended.start, duration, True, not from_finalize, from_finalize
        )
        self._conn.transcripts_sent.append(transcript)
        self._report(f"transcript sent: {transcript!r}")
        if self._utterance_end:
            await self._send(
                {"type": "UtteranceEnd", "channel": [0, 1], "last_word_end": ended.end}
            )

    async def _send_results(
        self,
        transcript: str,
        words: list[str],
        start: float,
        duration: float,
        is_final: bool,
        speech_final: bool,
        from_finalize: bool,
    ) -> None:
        await self._send(
            {
                "type": "Results",
                "channel_index": [0, 1],
                "duration": round(duration, 3),
                "start": round(start, 3),
                "is_final": is_final,
                "speech_final": speech_final,
                "from_finalize": from_finalize,
                "channel": {
                    "alternatives": [
                        {
                            "transcript": transcript,
                            "confidence": 0.99 if transcript else 0.0,
                            "words": _spread_words(words, start, duration),
                        }
                    ]
                },
                "metadata": {
                    "request_id": self._request_id,
                    "model_info": _MODEL_INFO,
                    "model_uuid": "00000000-0000-0000-0000-000000000000",
                },
            }
        )

    def _metadata(self) -> dict[str, Any]:
        return {
            "type": "Metadata",
            "transaction_key": "deprecated",
            "request_id": self._request_id,
            "sha256": self._sha.hexdigest(),
            "created": datetime.now(UTC).isoformat(),
            "duration": round(self._detector.elapsed, 3),
            "channels": int(self._conn.query.get("channels", "1")),
            "models": [_MODEL_INFO["name"]],
            "model_info": {_MODEL_INFO["name"]: _MODEL_INFO},
        }

    async def _send(self, message: dict[str, Any]) -> None:
        if not self._ws.closed:
            await self._ws.send_str(json.dumps(message))


def _spread_words(words: list[str], start: float, duration: float) -> list[dict[str, Any]]:
    """Deepgram word entries, evenly spread across the utterance."""
    if not words:
        return []
    step = duration / len(words)
    return [
        {
            "word": re.sub(r"[^\w']", "", word).lower() or word,
            "start": round(start + i * step, 3),
            "end": round(start + (i + 1) * step, 3),
            "confidence": 0.99,
            "punctuated_word": word,
        }
        for i, word in enumerate(words)
    ]


def _silence_seconds(silence_ms: int, query: MultiDict[str]) -> float | None:
    """Silence that ends an utterance: the simulator's, lengthened by ``endpointing``.

    ``endpointing=false`` turns silence endpointing off, leaving Finalize to end utterances.
    """
    endpointing = query.get("endpointing")
    if endpointing == "false":
        return None
    if endpointing is not None and endpointing.isdigit():
        return max(silence_ms, int(endpointing)) / 1000
    return silence_ms / 1000


def _api_key(request: web.Request) -> str | None:
    """The key from ``Authorization: Token <key>`` (or ``Bearer``), as the SDK sends it."""
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme not in ("Token", "Bearer") or not key:
        return None
    return key


def main(argv: list[str] | None = None) -> None:
    """Serve the simulator from the command line until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--transcript", action="append", default=[], help="repeat, in order")
    args = parser.parse_args(argv)
    sim = DeepgramSimulator(args.transcript, on_event=print_event)
    serve_until_interrupted(
        sim,
        args.host,
        args.port,
        lambda: f"Deepgram simulator listening on {sim.ws_url}{LISTEN_PATH}",
    )


if __name__ == "__main__":
    main()
