"""The template a pool's workers are forked from, started before the front's own imports.

A pool's workers are forked from a template (``multiprocessing``'s forkserver:
``process.py`` says why) that imports the worker's module and a call's, about
1.2 s of CPU on a 2-core AMD EPYC, while the front imports the API, 0.4 s.
Started from ``serve_front``, the template began only once ``main.py``'s
imports were done, and the two came one after the other. ``start_early``,
called by ``python main.py`` before its imports, starts it from the
environment alone, so it imports on the other core while the front imports
the API; ``serve_front`` then takes it (``take_early``) instead of starting
one. Anything that keeps it from starting early (a single runner, ``--help``,
settings the runner refuses) leaves the start to ``serve_front``, which says
what is wrong as before.

The template keeps the environment it started with, and so does every worker
forked from it: the scratch directory where the workers count their metrics
(``PROMETHEUS_MULTIPROC_DIR``) is made and set for it as it starts, and for it
alone: the front, which imports prometheus-client after it, counts its own
metrics in memory.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from teamrunner.config import Settings
from teamrunner.lifecycle.warmup import call_modules
from teamrunner.workers.cores import worker_count

WorkerContext = multiprocessing.context.ForkServerContext

# The modules the template imports (``preload.py``), set for the template alone.
MODULES_VARIABLE = "TEAMRUNNER_TEMPLATE_MODULES"


def worker_modules(settings: Settings) -> tuple[str, ...]:
    """What a pool's template imports before it forks a worker.

    The runner's module by its import name (run as a script it is ``__main__``,
    which the template does not import), then what a call imports.
    """
    return ("main", *call_modules(settings))


@dataclass
class Template:
    """A started template, and the scratch directory its workers were given.

    Attributes:
        context: Forks the workers (``WorkerProcess.start``).
        scratch: Removed when the front ends; ``sockets`` and ``metrics`` are in it.
    """

    context: WorkerContext
    scratch: tempfile.TemporaryDirectory[str]

    @property
    def sockets(self) -> Path:
        return Path(self.scratch.name, "sockets")

    @property
    def metrics(self) -> Path:
        return Path(self.scratch.name, "metrics")


def start_template(preload: Sequence[str]) -> Template:
    """Start the template the workers are forked from; it imports ``preload`` meanwhile.

    Once per process, before its first worker. ``preload`` names the worker's
    own module by its import name, then what a call imports; the template
    imports them through ``preload.py``. A module the template cannot import
    is left to each worker to import (and to fail on, saying why).
    """
    scratch = tempfile.TemporaryDirectory(prefix="teamrunner-")
    template = Template(multiprocessing.get_context("forkserver"), scratch)
    template.sockets.mkdir(mode=0o700)
    template.metrics.mkdir(mode=0o700)
    # The template imports ``preload`` through one module, on a settled heap.
    template.context.set_forkserver_preload(["teamrunner.workers.preload"])
    template_only = {
        # Read by prometheus-client as the template imports it: the workers count in
        # files. The front counts in its own memory, so the variable is the template's.
        "PROMETHEUS_MULTIPROC_DIR": str(template.metrics),
        MODULES_VARIABLE: ",".join(preload),
    }
    os.environ.update(template_only)
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        for name in template_only:
            del os.environ[name]
    return template


_early: Template | None = None


def start_early(argv: Sequence[str]) -> None:
    """Start the template now if ``python main.py argv`` will serve a pool; else nothing."""
    global _early
    if _early is not None or {"-h", "--help"} & set(argv):
        return
    try:
        settings = Settings.from_env()
    except Exception:  # main() reads them again, and says what is wrong
        return
    if worker_count(settings) > 1:
        _early = start_template(worker_modules(settings))


def take_early() -> Template | None:
    """The template ``start_early`` started, once; None if it started none."""
    global _early
    template, _early = _early, None
    return template
