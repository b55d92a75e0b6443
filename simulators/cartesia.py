"""A simulated Cartesia text-to-speech websocket: tone voices, not speech.

``CartesiaSimulator`` serves Cartesia's TTS websocket (``/tts/websocket``) on
loopback, so pipecat's real ``CartesiaTTSService(url=sim.ws_url + "/tts/websocket")``
and the ``cartesia`` SDK (``AsyncCartesia(websocket_base_url=sim.ws_url)``)
work unchanged. Each generation request is answered in Cartesia's message
shapes: ``chunk`` messages of base64 audio in the requested ``output_format``,
``timestamps`` with word times when ``add_timestamps`` is set, ``flush_done``
for ``flush``, and ``done`` once a context's input ends (``continue: false``).
``cancel`` stops a context. The audio is ``voices.py``'s tone for the voice id,
not speech.

It holds no other Cartesia API (no ``/tts/bytes``, no SSE, no STT).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web
from multidict import MultiDict

from simulators.audio import SUPPORTED_ENCODINGS, bytes_per_sample
from simulators.tts import TTSSimulator
from simulators.voices import SpeechRequest, char_seconds, word_timings

WEBSOCKET_PATH = "/tts/websocket"

#: Audio per ``chunk`` message.
CHUNK_SECONDS = 0.1


@dataclass
class CartesiaConnection:
    """What one client connection to ``/tts/websocket`` carried."""

    query: MultiDict[str]
    api_key: str | None
    cartesia_version: str | None
    cancelled_contexts: list[str] = field(default_factory=list)
    closed: bool = False


class CartesiaSimulator(TTSSimulator[CartesiaConnection]):
    """Cartesia's TTS websocket on loopback, speaking in tones; options as ``TTSSimulator``."""

    name = "cartesia"

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(WEBSOCKET_PATH, self._handle_websocket)
        return app

    async def _handle_websocket(self, request: web.Request) -> web.StreamResponse:
        refusal = self.refusal()
        if refusal is not None:
            return refusal
        # No permessage-deflate: PCM barely compresses, and a runner should not
        # be measured paying to compress it for a simulator.
        ws = web.WebSocketResponse(compress=False, max_msg_size=0)
        await ws.prepare(request)
        conn = CartesiaConnection(
            MultiDict(request.query),
            _api_key(request),
            request.headers.get("Cartesia-Version") or request.query.get("cartesia_version"),
        )
        async with self.connection(ws, conn, "connection opened"):
            session = _Session(self, conn, ws, self.report)
            try:
                await session.run()
            finally:
                await session.stop()
        return ws


@dataclass
class _Context:
    """One Cartesia context: its requests are spoken in order by one task."""

    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    elapsed: float = 0.0
    flushes: int = 0


class _Session:
    """One connection: routes requests to per-context speakers, sends their replies."""

    def __init__(
        self,
        sim: CartesiaSimulator,
        conn: CartesiaConnection,
        ws: web.WebSocketResponse,
        report: Callable[[str], None],
    ) -> None:
        self._sim = sim
        self._report = report
        self._conn = conn
        self._ws = ws
        self._contexts: dict[str, _Context] = {}
        self._cancelled: set[str] = set()
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        async for message in self._ws:
            if message.type != WSMsgType.TEXT:
                continue
            await self._on_request(json.loads(message.data))

    async def stop(self) -> None:
        for context in self._contexts.values():
            if context.task is not None:
                context.task.cancel()
        await asyncio.gather(
            *(c.task for c in self._contexts.values() if c.task), return_exceptions=True
        )

    async def _on_request(self, request: dict[str, Any]) -> None:
        context_id = str(request.get("context_id", ""))
        if request.get("cancel"):
            await self._cancel(context_id)
            return
        if context_id in self._cancelled:
            return
        problem = _validate(request)
        if problem:
            await self._send_error(context_id, problem)
            return
        output = request["output_format"]
        await self._sim.record(
            SpeechRequest(
                voice_id=_voice_id(request),
                context_id=context_id,
                transcript=str(request.get("transcript", "")),
                model_id=request.get("model_id"),
                language=request.get("language"),
                sample_rate=int(output["sample_rate"]),
                encoding=str(output["encoding"]),
            )
        )
        context = self._contexts.setdefault(context_id, _Context())
        if context.task is None:
            context.task = asyncio.create_task(self._speak_context(context_id, context))
        context.queue.put_nowait(request)

    async def _cancel(self, context_id: str) -> None:
        self._cancelled.add(context_id)
        self._conn.cancelled_contexts.append(context_id)
        self._report(f"context {context_id} cancelled")
        context = self._contexts.pop(context_id, None)
        if context is not None and context.task is not None:
            context.task.cancel()
        await self._sim.notify()

    async def _speak_context(self, context_id: str, context: _Context) -> None:
        while True:
            request = await context.queue.get()
            transcript = str(request.get("transcript", ""))
            if transcript:
                await self._speak(context_id, context, request, transcript)
            if request.get("flush"):
                context.flushes += 1
                await self._send(
                    {
                        "type": "flush_done",
                        "context_id": context_id,
                        "flush_id": context.flushes,
                        "flush_done": True,
                        "done": False,
                        "status_code": 206,
                    }
                )
            if not request.get("continue", False):
                await self._send(
                    {"type": "done", "context_id": context_id, "done": True, "status_code": 200}
                )
                self._contexts.pop(context_id, None)
                return

    async def _speak(
        self, context_id: str, context: _Context, request: dict[str, Any], transcript: str
    ) -> None:
        output = request["output_format"]
        rate, encoding = int(output["sample_rate"]), str(output["encoding"])
        voice_id = _voice_id(request)
        audio = self._sim.voices.synthesize(
            transcript, voice_id, rate, self._sim.ms_per_char, encoding
        )
        char_s = char_seconds(rate, self._sim.ms_per_char)
        chars_per_chunk = max(1, round(CHUNK_SECONDS / char_s))
        bytes_per_char = round(char_s * rate) * bytes_per_sample(encoding)
        words = word_timings(transcript, rate, self._sim.ms_per_char)
        await self._sim.hold_while_stalled()
        stream = self._sim.stream()
        for index, first_char in enumerate(range(0, len(transcript), chars_per_chunk)):
            await stream.before_chunk(index, first_char * char_s)
            last_char = min(first_char + chars_per_chunk, len(transcript))
            data = audio[first_char * bytes_per_char : last_char * bytes_per_char]
            if not first_char:
                self._sim.audio_started(context_id, transcript)
            await self._send(
                {
                    "type": "chunk",
                    "context_id": context_id,
                    "data": base64.b64encode(data).decode("ascii"),
                    "done": False,
                    "status_code": 206,
                    "step_time": 1.0,
                }
            )
            started = [w for w in words if first_char <= round(w.start / char_s) < last_char]
            if started and request.get("add_timestamps"):
                await self._send(
                    {
                        "type": "timestamps",
                        "context_id": context_id,
                        "done": False,
                        "status_code": 206,
                        "word_timestamps": {
                            "words": [w.word for w in started],
                            "start": [round(context.elapsed + w.start, 4) for w in started],
                            "end": [round(context.elapsed + w.end, 4) for w in started],
                        },
                    }
                )
        self._sim.audio_finished(context_id, transcript)
        context.elapsed += len(transcript) * char_s

    async def _send_error(self, context_id: str, problem: str) -> None:
        self._report(f"error for context {context_id}: {problem}")
        await self._send(
            {
                "type": "error",
                "context_id": context_id,
                "done": True,
                "status_code": 400,
                "title": "Invalid request",
                "message": problem,
                "error_code": "invalid_request",
            }
        )

    async def _send(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            if not self._ws.closed:
                await self._ws.send_str(json.dumps(message))


def _voice_id(request: dict[str, Any]) -> str:
    """The voice asked for: a bare id (newer API versions) or an object with an ``id``."""
    voice = request.get("voice")
    if isinstance(voice, dict):
        return str(voice.get("id") or "")
    return str(voice or "")


def _validate(request: dict[str, Any]) -> str | None:
    """What is wrong with a generation request, in Cartesia's words, or None."""
    if not _voice_id(request):
        return "voice is required: a voice id, or an object with an 'id'"
    output = request.get("output_format")
    if not isinstance(output, dict):
        return "output_format is required"
    if output.get("container", "raw") != "raw":
        return f"output_format.container {output.get('container')!r}: the simulator speaks 'raw'"
    if output.get("encoding") not in SUPPORTED_ENCODINGS:
        return (
            f"output_format.encoding {output.get('encoding')!r} is not one of "
            f"{sorted(SUPPORTED_ENCODINGS)}"
        )
    if not isinstance(output.get("sample_rate"), int) or output["sample_rate"] <= 0:
        return f"output_format.sample_rate {output.get('sample_rate')!r} is not a positive integer"
    if not request.get("model_id"):
        return "model_id is required"
    return None


def _api_key(request: web.Request) -> str | None:
    """The key, from any place Cartesia accepts one: header, bearer token or query."""
    if "X-API-Key" in request.headers:
        return request.headers["X-API-Key"]
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme == "Bearer" and token:
        return token
    return request.query.get("api_key")


def main(argv: list[str] | None = None) -> None:
    """Serve the simulator from the command line until interrupted."""
    CartesiaSimulator.main(
        argv,
        __doc__.splitlines()[0],
        lambda sim: f"Cartesia simulator listening on {sim.ws_url}{WEBSOCKET_PATH}",
    )


if __name__ == "__main__":
    main()
