"""Timestamps inside a runner process, for ``bench/handoff_timeline.py`` only.

Python imports a ``sitecustomize`` module at start-up from ``PYTHONPATH``; the
benchmark puts this directory there for the runner it starts, and nowhere
else. With ``TIMELINE_OUT`` set it wraps a few pipecat methods to note when
each frame is pushed, when the output transport's media sender handles a
frame, and when a function call runs, the CPU time of every event-loop
callback (so a benchmark can tell the work inside a gap from the time the
process waited for a core), and notes every callback
that runs for more than 0.2 ms (the runner is served on asyncio's own loop
for this: uvloop's callbacks cannot be timed from Python). SIGUSR1 writes
the notes to ``TIMELINE_OUT`` as JSON and starts afresh. It measures; it
changes nothing a call does.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

NOTES: list[tuple[float, str, str]] = []


def _note(who: str, what: str) -> None:
    NOTES.append((time.monotonic(), who, what))


def _wrap_pipecat() -> None:
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.services.llm_service import LLMService
    from pipecat.transports.base_output import BaseOutputTransport

    push = FrameProcessor.push_frame

    async def push_frame(self: Any, frame: Any, direction: Any = FrameDirection.DOWNSTREAM) -> None:
        way = "up" if direction == FrameDirection.UPSTREAM else "down"
        _note(self.name, f"pushes {type(frame).__name__} {way}")
        await push(self, frame, direction)

    FrameProcessor.push_frame = push_frame  # type: ignore[method-assign]

    handle = BaseOutputTransport.MediaSender._handle_frame

    async def handle_frame(self: Any, frame: Any) -> None:
        _note("output media sender", f"takes {type(frame).__name__}")
        await handle(self, frame)

    BaseOutputTransport.MediaSender._handle_frame = handle_frame  # type: ignore[method-assign]

    run = LLMService._run_function_call

    async def run_function_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        _note(self.name, "runs the function")
        try:
            return await run(self, *args, **kwargs)
        finally:
            _note(self.name, "function returned")

    LLMService._run_function_call = run_function_call  # type: ignore[method-assign]


def _owner(callback: Any) -> str:
    """What a slow callback was running: a task's coroutine and its processor, if any."""
    task = getattr(callback, "__self__", None)
    coro = task.get_coro() if task is not None and hasattr(task, "get_coro") else None
    if coro is None:
        return getattr(callback, "__qualname__", repr(callback))
    frame = getattr(coro, "cr_frame", None)
    inner = frame.f_locals.get("coroutine") if frame is not None else None
    target = inner or coro
    owner = ""
    target_frame = getattr(target, "cr_frame", None)
    if target_frame is not None:
        owner = getattr(target_frame.f_locals.get("self"), "name", "")
    name = getattr(target, "__qualname__", type(target).__name__)
    return f"{owner} {name}".strip()


def _time_callbacks() -> None:
    import asyncio.events

    run = asyncio.events.Handle._run

    def timed_run(self: Any) -> None:
        started = time.monotonic()
        cpu = time.thread_time()
        run(self)
        took = time.monotonic() - started
        NOTES.append((started, "cpu", f"{(time.thread_time() - cpu) * 1000:.4f}"))
        if took > 0.0002:
            what = f"{took * 1000:.2f} ms in {_owner(self._callback)}"
            NOTES.append((started, "event loop", what))

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]


def _dump(*_: object) -> None:
    with open(os.environ["TIMELINE_OUT"], "w") as out:
        json.dump(NOTES, out)
    NOTES.clear()


if os.environ.get("TIMELINE_OUT"):
    sys.modules["uvloop"] = None  # type: ignore[assignment]  # uvicorn then serves on asyncio
    _wrap_pipecat()
    _time_callbacks()
    signal.signal(signal.SIGUSR1, _dump)
