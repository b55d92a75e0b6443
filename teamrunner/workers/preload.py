"""The template's imports, made with the garbage collector off and then frozen.

Imported by a pool's template, and only there (``template.start_template``
names it as the template's one preloaded module). The template imports the
worker's module and a call's, about half a million objects that live as
long as the process; with the collector on, it walked them over and over
while they came (0.2–0.3 s of a template's 1.1 s of imports on a 2-core
AMD EPYC, timing ``import main, run`` with the collector on and off), and
the template's imports are what every worker waits for. So
they are made inside ``settled_heap``, as a single runner's warm-up makes
them: no collection meanwhile, and what is there at the end frozen, which
the workers inherit (a collection in a worker walks only what its calls
make, and never writes to the pages it shares with the template).

The modules are named in ``MODULES_VARIABLE``, which ``start_template`` sets
for the template alone. A module that cannot be imported is left to each
worker to import, and to fail on, saying why.
"""

from __future__ import annotations

import contextlib
import importlib
import os

from teamrunner.lifecycle.warmup import settled_heap
from teamrunner.workers.template import MODULES_VARIABLE

with settled_heap():
    for _module in filter(None, os.environ.get(MODULES_VARIABLE, "").split(",")):
        with contextlib.suppress(ImportError):
            importlib.import_module(_module)
