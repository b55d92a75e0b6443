"""What watches a playground call for the designer: its timeline, and Whisker when it serves.

Every command that runs a team's call (``demo``, ``call``, ``eval``,
``eval-bot``, ``talk``) gives each call a ``CallWatch``: a ``CallTimeline``
(``timeline/``) that records it, and, when the command serves pipecat's
Whisker (``whisker.py``), Whisker's observer of it. Once the call is over,
``write`` draws its timeline as a page under the command's ``--out``.

``CallWatch`` is a ``main.CallObservers``, for a call built over
pipecat-manager's sockets by ``main.build_call``; ``build_watched`` is the
same for a call whose transport the command makes itself (the eval socket,
the browser's peer). Nothing here is in the runner's own path: the runner
never imports the playground.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from playground.timeline import CallTimeline

if TYPE_CHECKING:
    from pipecat.observers.base_observer import BaseObserver
    from pipecat.pipeline.worker import PipelineWorker

    from playground.whisker import Whisker
    from run import Call
    from teamrunner.lifecycle.runtime import Runtime
    from teamrunner.observe.journal import CallJournal
    from teamrunner.plan import CallPlan
    from teamrunner.transport import CallTransport


class CallWatch:
    """What watches one call: its timeline, and Whisker when it serves.

    Called once the call is built, with its plan and worker (``main.CallObservers``).

    Args:
        whisker: pipecat's Whisker, serving, to send the call's frames to (None: not asked for).
    """

    def __init__(self, whisker: Whisker | None = None) -> None:
        self.timeline: CallTimeline | None = None
        self._whisker = whisker

    def __call__(self, plan: CallPlan, worker: PipelineWorker) -> Iterator[BaseObserver]:
        self.timeline = CallTimeline(plan)
        yield self.timeline
        if self._whisker is not None:
            yield self._whisker.observer(worker)

    def write(self, path: Path, *, title: str) -> Path | None:
        """Write the call's timeline as HTML at ``path``; ``path``, or None if no call was built."""
        if self.timeline is None:
            return None
        return self.timeline.write(path, title=title)


def build_watched(
    plan: CallPlan,
    runtime: Runtime,
    journal: CallJournal,
    transport: CallTransport,
    watch: CallWatch,
    observers: Iterable[BaseObserver] = (),
) -> Call:
    """``run.build_call`` over ``transport``, watched by ``watch`` as ``main.build_call`` watches.

    ``observers`` are the command's own (the talk page's events), given to the builder.
    """
    import run

    call = run.build_call(plan, runtime, journal, transport, observers=observers)
    for observer in watch(plan, call.worker):
        call.worker.add_observer(observer)
    return call


def timeline_written(path: Path) -> str:
    """What a command prints once it has written a call's timeline at ``path``."""
    return f"wrote {path} (the call's timeline: open it in a browser)"
