"""A lean plain-pipecat runner: the baseline the runner's ``/run`` is timed against.

The least a pipecat 1.14 service must do to take pipecat-manager's single-AI
text call, written the way pipecat's own examples serve bots from FastAPI:
one stock ``WorkerRunner`` for the process (``auto_end=False``, a long-lived
host) to which each call adds a stock ``PipelineWorker``; the call's output
socket is pipecat's websocket client transport with its protobuf serializer;
its LLM is pipecat's OpenAI service, every call's on one shared ``AsyncOpenAI``
client (one HTTP connection pool for the process); the worker adds pipecat's
RTVI processor and observer by itself, which send ``bot-llm-text`` to the
socket. ``POST /run`` answers once the call's pipeline has started (the
socket connected, the LLM set up) and then asks the LLM for the opening
words, as the runner's single AI does; ``POST /stop?id=`` cancels the call.

It does none of what the runner adds: no validation beyond the fields it
reads, no admission, no journal or metrics, no flows, no redaction, no drain,
one process. It reads ``PIPECATCALL_ADDRESS``, ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` and ``RUNNER_PORT`` from the environment, as the runner
does, so ``bench.run_latency`` starts both the same way.

    python -m bench.lean_runner
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException, Request
from loguru import logger
from openai import AsyncOpenAI
from pipecat.frames.frames import LLMRunFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.serializers.protobuf import ProtobufFrameSerializer
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.transports.websocket.client import WebsocketClientParams, WebsocketClientTransport
from pipecat.turns.user_start import TranscriptionUserTurnStartStrategy
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

SAMPLE_RATE = 16000


class SharedClientLLM(OpenAILLMService):
    """pipecat's OpenAI service on the process's one client (pipecat's ``create_client`` hook)."""

    def __init__(self, client: AsyncOpenAI, **kwargs: Any) -> None:
        self._shared = client
        super().__init__(**kwargs)

    def create_client(self, *args: Any, **kwargs: Any) -> AsyncOpenAI:
        return self._shared


def create_app() -> FastAPI:
    manager = os.environ.get("PIPECATCALL_ADDRESS", "localhost:8001")
    client = AsyncOpenAI(
        api_key=os.environ.get("OPENAI_API_KEY", "none"), base_url=os.environ.get("OPENAI_BASE_URL")
    )
    runner: WorkerRunner | None = None
    calls: dict[str, PipelineWorker] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        nonlocal runner
        runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
        running = asyncio.get_running_loop().create_task(runner.run(auto_end=False))
        yield
        await runner.cancel()
        await running

    app = FastAPI(lifespan=lifespan)

    @app.post("/run")
    async def run(request: Request) -> dict[str, Any]:
        body = await request.json()
        call_id: str = body["id"]
        model = body["llm_type"].split(".", 1)[1]
        transport = WebsocketClientTransport(
            uri=f"ws://{manager}/{call_id}/ws?direction=output",
            params=WebsocketClientParams(
                serializer=ProtobufFrameSerializer(),
                audio_out_enabled=True,
                audio_out_sample_rate=SAMPLE_RATE,
            ),
        )
        llm = SharedClientLLM(client, settings=OpenAILLMService.Settings(model=model))
        context = LLMContext(messages=body["llm_messages"])
        # A text call: its turns arrive as text, so no VAD and no smart-turn model per call.
        turns = UserTurnStrategies(
            start=[TranscriptionUserTurnStartStrategy()], stop=[SpeechTimeoutUserTurnStopStrategy()]
        )
        aggregators = LLMContextAggregatorPair(
            context, user_params=LLMUserAggregatorParams(user_turn_strategies=turns)
        )
        worker = PipelineWorker(
            Pipeline([aggregators.user(), llm, transport.output(), aggregators.assistant()]),
            params=PipelineParams(
                audio_in_sample_rate=SAMPLE_RATE, audio_out_sample_rate=SAMPLE_RATE
            ),
            idle_timeout_secs=None,
            name=f"call-{call_id}",
        )
        started = asyncio.Event()

        @worker.event_handler("on_pipeline_started")
        async def on_started(worker: PipelineWorker, frame: Any) -> None:
            started.set()

        @worker.event_handler("on_pipeline_finished")
        async def on_finished(worker: PipelineWorker, frame: Any) -> None:
            calls.pop(call_id, None)

        assert runner is not None
        calls[call_id] = worker
        await runner.add_workers(worker)
        await started.wait()
        await worker.queue_frame(LLMRunFrame())
        return {"status": "started", "id": call_id}

    @app.post("/stop")
    async def stop(id: str) -> dict[str, Any]:
        worker = calls.pop(id, None)
        if worker is None:
            raise HTTPException(404, "no such call")
        await worker.cancel()
        return {"status": "stopped", "id": id}

    @app.get("/ready")
    async def ready() -> dict[str, str]:
        return {"status": "ready"}

    return app


if __name__ == "__main__":
    logger.remove()
    logger.add(sys.stderr, level=os.environ.get("RUNNER_LOG_LEVEL", "WARNING"))
    uvicorn.run(
        create_app(),
        host="127.0.0.1",
        port=int(os.environ["RUNNER_PORT"]),
        log_level="warning",
    )
