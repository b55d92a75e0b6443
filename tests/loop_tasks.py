"""The tasks an event loop creates: how the tests see a task made per frame.

pipecat hands frames from one task to another with ``asyncio.wait_for``, which
in Python 3.11 makes a task for every frame; the runner's adapters take that
out (``teamrunner.pipecat_internals``), and their tests count the tasks made
while frames flow.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def tasks_created() -> Iterator[list[asyncio.Task[object]]]:
    """Every task the running loop creates inside the block."""
    loop = asyncio.get_running_loop()
    created: list[asyncio.Task[object]] = []
    before = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro, **kwargs):  # type: ignore[no-untyped-def]
        task = asyncio.Task(coro, loop=loop, **kwargs)
        created.append(task)
        return task

    loop.set_task_factory(factory)
    try:
        yield created
    finally:
        loop.set_task_factory(before)


def tasks_running(
    created: list[asyncio.Task[object]], coroutines: str | tuple[str, ...]
) -> list[asyncio.Task[object]]:
    """The tasks of ``created`` that run one of ``coroutines`` (the end of its qualified name)."""
    return [t for t in created if getattr(t.get_coro(), "__qualname__", "").endswith(coroutines)]
