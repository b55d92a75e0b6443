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

import asyncio
import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web
from multidict import MultiDict

from simulators.audio import PCM_MULAW, PCM_S16LE, bytes_per_sample
from simulators.tts import TTSSimulator
from simulators.voices import SpeechRequest, char_seconds

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


class ElevenLabsSimulator(TTSSimulator[ElevenLabsConnection]):
    """ElevenLabs' multi-context TTS websocket on loopback, speaking in tones; options as
    ``TTSSimulator``."""

    name = "elevenlabs"

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(MULTI_STREAM_PATH, self._handle_websocket)
        return app

    @property
    def api_keys_seen(self) -> list[str | None]:
        """The ``xi-api-key`` of every connection, in the order they opened."""
        return [conn.api_key for conn in self.connections]

    async def _handle_websocket(self, request: web.Request) -> web.StreamResponse:
        refusal = self.refusal()
        if refusal is not None:
            return refusal
        output_format = request.query.get("output_format", "mp3_44100_128")
        if _parse_output_format(output_format) is None:
            return web.Response(
                status=400,
                text=f"output_format {output_format!r}: the simulator speaks pcm_<rate> and "
                "ulaw_8000 only",
            )
        # No permessage-deflate: PCM barely compresses, and a runner should not
        # be measured paying to compress it for a simulator.
        ws = web.WebSocketResponse(compress=False, max_msg_size=0)
        await ws.prepare(request)
        conn = ElevenLabsConnection(
            request.match_info["voice_id"],
            MultiDict(request.query),
            request.headers.get("xi-api-key"),
        )
        opened = f"connection opened for voice {conn.voice_id}: {request.query_string}"
        async with self.connection(ws, conn, opened):
            session = _Session(self, conn, ws, self.report)
            try:
                await session.run()
            finally:
                await session.stop()
        return ws


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
        await self._sim.hold_while_stalled()
        stream = self._sim.stream()
        for index, first in enumerate(range(0, len(text), chars_per_chunk)):
            await stream.before_chunk(index, first * char_s)
            chars = list(text[first : first + chars_per_chunk])
            alignment = {
                "chars": chars,
                "charStartTimesMs": [_milliseconds(i * char_s) for i in range(len(chars))],
                "charDurationsMs": [char_ms] * len(chars),
            }
            data = audio[first * bytes_per_char : (first + len(chars)) * bytes_per_char]
            if not first:
                self._sim.audio_started(context_id, text)
            await self._send(
                {
                    "audio": base64.b64encode(data).decode("ascii"),
                    "normalizedAlignment": alignment,
                    "alignment": alignment,
                    "contextId": context_id,
                }
            )
        self._sim.audio_finished(context_id, text)

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
    ElevenLabsSimulator.main(
        argv,
        __doc__.splitlines()[0],
        lambda sim: f"ElevenLabs simulator listening on {sim.ws_url}",
    )


if __name__ == "__main__":
    main()
