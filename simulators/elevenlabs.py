"""A simulated ElevenLabs multi-context text-to-speech websocket: tone voices, not speech.

``ElevenLabsSimulator`` serves ElevenLabs' multi-context websocket
(``/v1/text-to-speech/{voice_id}/multi-stream-input``) on loopback, so
pipecat's real ``ElevenLabsTTSService(url=sim.ws_url)`` works unchanged. It
reads the messages pipecat sends (a context opening with text ``" "``, text
per ``context_id``, ``flush``, ``close_context``, ``close_socket``, empty-text
keep-alives) and answers per context in ElevenLabs' shapes: ``audio`` (base64,
in the ``output_format`` of the URL) with ``alignment`` and
``normalizedAlignment`` (``chars``, ``charStartTimesMs``, ``charDurationsMs``,
restarting at zero in every message) and a ``contextId``, then ``isFinal``
once a context is closed. The audio is ``voices.py``'s tone for the voice id in
the URL, not speech.

Text is spoken as it arrives when ``auto_mode=true`` (pipecat's default for
sentence aggregation); otherwise it is buffered until a ``flush``, a
``close_context`` or ``GENERATION_THRESHOLD_CHARS`` characters. It holds no
other ElevenLabs API (no single-context ``stream-input``, no HTTP TTS).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web
from multidict import MultiDict

from simulators.audio import PCM_MULAW, PCM_S16LE, bytes_per_sample
from simulators.server import Simulator
from simulators.voices import DEFAULT_MS_PER_CHAR, SpeechRequest, VoiceBook, char_seconds

MULTI_STREAM_PATH = "/v1/text-to-speech/{voice_id}/multi-stream-input"

#: Buffered text that triggers generation without auto mode (ElevenLabs'
#: first default ``chunk_length_schedule`` step).
GENERATION_THRESHOLD_CHARS = 120

#: Audio per ``audio`` message.
CHUNK_SECONDS = 0.1

_OUTPUT_FORMAT = re.compile(r"^(pcm|ulaw)_(\d+)$")


@dataclass
class ElevenLabsConnection:
    """What one client connection to the multi-stream websocket carried."""

    voice_id: str
    query: MultiDict[str]
    api_key: str | None
    keepalives: int = 0
    #: (context_id, text) each time buffered text was handed over to be spoken.
    generations: list[tuple[str, str]] = field(default_factory=list)
    voice_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    flushed_contexts: list[str] = field(default_factory=list)
    closed_contexts: list[str] = field(default_factory=list)
    close_socket_requested: bool = False
    closed: bool = False


class ElevenLabsSimulator(Simulator):
    """ElevenLabs' multi-context TTS websocket on loopback, speaking in tones.

    Args:
        voices: which tone each voice id speaks in; pin tones here.
        first_audio_delay: seconds before the first audio of each generation.
        ms_per_char: how long each character of text lasts in the audio.
        chunk_delay: seconds between audio messages, so a test can interrupt
            a generation part-way (0 sends them back to back).
    """

    name = "elevenlabs"

    def __init__(
        self,
        *,
        voices: VoiceBook | None = None,
        first_audio_delay: float = 0.0,
        ms_per_char: float = DEFAULT_MS_PER_CHAR,
        chunk_delay: float = 0.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.voices = voices or VoiceBook()
        self.first_audio_delay = first_audio_delay
        self.ms_per_char = ms_per_char
        self.chunk_delay = chunk_delay
        self.on_event = on_event
        #: When True, handshakes are answered with HTTP ``refusal_status`` instead.
        self.refuse_connections = False
        self.refusal_status = 503
        self.connections: list[ElevenLabsConnection] = []
        self.requests: list[SpeechRequest] = []
        self._sockets: set[web.WebSocketResponse] = set()

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(MULTI_STREAM_PATH, self._handle_websocket)
        return app

    def texts_for_voice(self, voice_id: str) -> list[str]:
        """Every text sent for ``voice_id`` to speak, in order."""
        return [r.transcript for r in self.requests if r.voice_id == voice_id]

    @property
    def api_keys_seen(self) -> list[str | None]:
        """The ``xi-api-key`` of every connection, in the order they opened."""
        return [conn.api_key for conn in self.connections]

    async def close_connections(self, code: int = 1011) -> None:
        """Drop every open connection, as a provider failing mid-call would."""
        for ws in list(self._sockets):
            await ws.close(code=code, message=b"simulated provider failure")

    async def record(self, request: SpeechRequest) -> None:
        """Keep a request to speak, so tests can see what each voice was asked to say."""
        self.requests.append(request)
        self._report(f"{request.voice_id} asked to say {request.transcript!r}")
        await self.notify()

    async def _handle_websocket(self, request: web.Request) -> web.StreamResponse:
        if self.refuse_connections:
            self._report(f"refused a connection with HTTP {self.refusal_status}")
            return web.Response(status=self.refusal_status, text="simulated refusal")
        output_format = request.query.get("output_format", "mp3_44100_128")
        if _parse_output_format(output_format) is None:
            return web.Response(
                status=400,
                text=f"output_format {output_format!r}: the simulator speaks pcm_<rate> and "
                "ulaw_8000 only",
            )
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        conn = ElevenLabsConnection(
            request.match_info["voice_id"],
            MultiDict(request.query),
            request.headers.get("xi-api-key"),
        )
        self.connections.append(conn)
        self.connections_opened += 1
        self.active_connections += 1
        self._sockets.add(ws)
        self._report(f"connection opened for voice {conn.voice_id}: {request.query_string}")
        await self.notify()
        session = _Session(self, conn, ws, self._report)
        try:
            await session.run()
        finally:
            await session.stop()
            self._sockets.discard(ws)
            conn.closed = True
            self.active_connections -= 1
            self._report("connection closed")
            await self.notify()
        return ws

    def _report(self, event: str) -> None:
        if self.on_event is not None:
            self.on_event(event)


def _parse_output_format(output_format: str) -> tuple[str, int] | None:
    """(encoding, sample rate) for an ``output_format`` the simulator can speak."""
    match = _OUTPUT_FORMAT.match(output_format)
    if match is None:
        return None
    kind, rate = match.group(1), int(match.group(2))
    if kind == "ulaw":
        return (PCM_MULAW, rate) if rate == 8000 else None
    return PCM_S16LE, rate


@dataclass(frozen=True)
class _Speak:
    text: str


@dataclass(frozen=True)
class _Finish:
    pass


@dataclass
class _Context:
    """One ElevenLabs context: text waiting to be spoken, and the task speaking it."""

    queue: asyncio.Queue[_Speak | _Finish] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    buffer: str = ""
    closing: bool = False


class _Session:
    """One connection: buffers text per context and speaks it in order."""

    def __init__(
        self,
        sim: ElevenLabsSimulator,
        conn: ElevenLabsConnection,
        ws: web.WebSocketResponse,
        report: Callable[[str], None],
    ) -> None:
        self._sim = sim
        self._conn = conn
        self._ws = ws
        self._report = report
        encoding_and_rate = _parse_output_format(conn.query.get("output_format", ""))
        assert encoding_and_rate is not None  # checked at the handshake
        self._encoding, self._rate = encoding_and_rate
        self._auto_mode = conn.query.get("auto_mode", "false") == "true"
        self._contexts: dict[str, _Context] = {}
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        async for message in self._ws:
            if message.type != WSMsgType.TEXT:
                continue
            payload = json.loads(message.data)
            if payload.get("close_socket"):
                self._conn.close_socket_requested = True
                self._report("close_socket received")
                await self._sim.notify()
                await self._ws.close()
                return
            await self._on_message(payload)

    async def stop(self) -> None:
        tasks = [c.task for c in self._contexts.values() if c.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _on_message(self, payload: dict[str, Any]) -> None:
        if payload.get("text") == "" and not (payload.get("flush") or payload.get("close_context")):
            # An empty text only resets the inactivity timer.
            self._conn.keepalives += 1
            await self._sim.notify()
            return
        context_id = str(payload.get("context_id", ""))
        context = self._open_context(context_id)
        if context.closing:
            return
        if "voice_settings" in payload:
            self._conn.voice_settings[context_id] = payload["voice_settings"]
        text = payload.get("text")
        if isinstance(text, str) and text.strip():
            context.buffer += text
            await self._sim.record(self._request(context_id, text))
        if payload.get("flush"):
            self._conn.flushed_contexts.append(context_id)
        if payload.get("close_context"):
            self._conn.closed_contexts.append(context_id)
            context.closing = True
        if (
            payload.get("flush")
            or context.closing
            or self._auto_mode
            or len(context.buffer) >= GENERATION_THRESHOLD_CHARS
        ) and context.buffer.strip():
            self._conn.generations.append((context_id, context.buffer))
            context.queue.put_nowait(_Speak(context.buffer))
            context.buffer = ""
        if context.closing:
            context.queue.put_nowait(_Finish())
        await self._sim.notify()

    def _open_context(self, context_id: str) -> _Context:
        context = self._contexts.get(context_id)
        if context is None:
            context = _Context()
            context.task = asyncio.create_task(self._speak_context(context_id, context))
            self._contexts[context_id] = context
        return context

    def _request(self, context_id: str, text: str) -> SpeechRequest:
        return SpeechRequest(
            voice_id=self._conn.voice_id,
            context_id=context_id,
            transcript=text,
            model_id=self._conn.query.get("model_id"),
            language=self._conn.query.get("language_code"),
            sample_rate=self._rate,
            encoding=self._encoding,
        )

    async def _speak_context(self, context_id: str, context: _Context) -> None:
        while True:
            item = await context.queue.get()
            if isinstance(item, _Finish):
                await self._send({"isFinal": True, "contextId": context_id})
                return
            await self._speak(context_id, item.text)

    async def _speak(self, context_id: str, text: str) -> None:
        ms_per_char = self._sim.ms_per_char
        audio = self._sim.voices.synthesize(
            text, self._conn.voice_id, self._rate, ms_per_char, self._encoding
        )
        char_s = char_seconds(self._rate, ms_per_char)
        char_ms = _milliseconds(char_s)
        chars_per_chunk = max(1, round(CHUNK_SECONDS / char_s))
        bytes_per_char = round(char_s * self._rate) * bytes_per_sample(self._encoding)
        await asyncio.sleep(self._sim.first_audio_delay)
        for first in range(0, len(text), chars_per_chunk):
            if first:
                await asyncio.sleep(self._sim.chunk_delay)
            chars = list(text[first : first + chars_per_chunk])
            alignment = {
                "chars": chars,
                "charStartTimesMs": [_milliseconds(i * char_s) for i in range(len(chars))],
                "charDurationsMs": [char_ms] * len(chars),
            }
            data = audio[first * bytes_per_char : (first + len(chars)) * bytes_per_char]
            await self._send(
                {
                    "audio": base64.b64encode(data).decode("ascii"),
                    "normalizedAlignment": alignment,
                    "alignment": alignment,
                    "contextId": context_id,
                }
            )

    async def _send(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            if not self._ws.closed:
                await self._ws.send_str(json.dumps(message))


def _milliseconds(seconds: float) -> int | float:
    """Seconds as ElevenLabs' milliseconds: whole numbers when they are whole."""
    ms = round(seconds * 1000, 3)
    return int(ms) if ms.is_integer() else ms


def main(argv: list[str] | None = None) -> None:
    """Serve the simulator from the command line until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ms-per-char", type=float, default=DEFAULT_MS_PER_CHAR)
    parser.add_argument("--first-audio-delay", type=float, default=0.0, help="seconds")
    args = parser.parse_args(argv)
    sim = ElevenLabsSimulator(
        first_audio_delay=args.first_audio_delay,
        ms_per_char=args.ms_per_char,
        on_event=_print_event,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(sim, args))


async def _serve(sim: ElevenLabsSimulator, args: argparse.Namespace) -> None:
    await sim.start(args.host, args.port)
    print(f"ElevenLabs simulator listening on {sim.ws_url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await sim.stop()


def _print_event(event: str) -> None:
    print(event, flush=True)


if __name__ == "__main__":
    main()
