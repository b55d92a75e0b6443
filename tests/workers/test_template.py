"""The workers' template, started by ``python main.py`` before the front's own imports.

Each case runs in an interpreter of its own: a template is a process-wide
forkserver, and the front's imports are what it must come before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from teamrunner.config import Settings
from teamrunner.workers.template import MODULES_VARIABLE, worker_modules

from runner_process import ROOT

# Starts the template early as ``python main.py`` does, then reports what the front sees.
PROBE = """
import json, os, sys
from teamrunner.workers.template import start_early, take_early
start_early(sys.argv[1:])
imported_api = "fastapi" in sys.modules
template = take_early()
report = {"started": template is not None, "imported_api": imported_api}
if template is not None:
    report.update(
        again=take_early() is not None,
        front_env="PROMETHEUS_MULTIPROC_DIR" in os.environ,
        sockets_mode=oct(template.sockets.stat().st_mode & 0o777),
        metrics_mode=oct(template.metrics.stat().st_mode & 0o777),
    )
    template.scratch.cleanup()
print(json.dumps(report))
"""


def last_line(script: str, *args: str, environment: dict[str, str]) -> str:
    """The last line ``python -c script args`` printed, in an interpreter of its own."""
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def probe(workers: str, *args: str) -> dict[str, object]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")},
        "RUNNER_WORKERS": workers,
    }
    report: dict[str, object] = json.loads(last_line(PROBE, *args, environment=environment))
    return report


def test_a_pool_starts_its_template_before_the_api_is_imported_and_hands_it_over_once() -> None:
    report = probe("2")

    assert report == {
        "started": True,
        "imported_api": False,
        "again": False,
        # The workers count metrics in files; the front, in its own memory.
        "front_env": False,
        "sockets_mode": "0o700",
        "metrics_mode": "0o700",
    }


@pytest.mark.parametrize(("workers", "args"), [("1", ()), ("2", ("--help",)), ("two", ())])
def test_no_template_starts_early_for_a_single_runner_help_or_settings_it_refuses(
    workers: str, args: tuple[str, ...]
) -> None:
    assert probe(workers, *args) == {"started": False, "imported_api": False}


def imported_as_the_template_does(modules: str, script: str) -> str:
    """What ``script`` prints after ``teamrunner.workers.preload`` imported ``modules``."""
    return last_line(
        "import teamrunner.workers.preload\n" + script,
        environment={**os.environ, MODULES_VARIABLE: modules},
    )


def test_the_template_starts_no_thread_when_it_imports_the_call_stack() -> None:
    # Workers are forked from a process that has imported these: a thread started there
    # would be missing in every worker, holding whatever lock it held at the fork.
    modules = ",".join(worker_modules(Settings.from_env()))
    printed = imported_as_the_template_does(
        modules, "import threading, sys; print(threading.active_count())"
    )

    assert printed == "1"


def test_the_templates_imports_leave_a_frozen_heap_and_skip_a_module_it_lacks() -> None:
    printed = imported_as_the_template_does(
        "no_such_module_here,decimal",
        "import gc, json, sys; print(json.dumps("
        "[gc.isenabled(), gc.get_freeze_count() > 0, 'decimal' in sys.modules]))",
    )

    # The collector is back on, and walks nothing the imports made.
    assert json.loads(printed) == [True, True, True]
