"""Worker processes: calls per pod that grow with its cores.

One Python process runs calls on one core. With ``RUNNER_WORKERS`` above 1,
``python main.py`` becomes the *front* of a pool: it owns the port Go calls,
and starts that many *workers*, each a process of its own serving the
runner's application (calls, admission, drain, as a single runner) on a
private Unix socket, forked from a template that has imported the call
stack once, and warmed up (``teamrunner.lifecycle.warmup``) before it is
ready. The front offers each call to the workers in turn, each admitting
by its own load, and routes its stop to the worker that holds it; each
worker dials Go's websockets for its own calls,
so audio never crosses the front. Across pods, Kubernetes scales out; this
is one pod's cores, and nothing more distributed.

::

    cores.py    how many workers: RUNNER_WORKERS, or the cores the process may use
    template.py where workers are forked from, started before the front's own imports
    preload.py  what the template imports, on a settled heap (imported there alone)
    process.py  one worker process: forked, watched, spoken to over its socket
    link.py     the front's line to one worker: HTTP/1.1 on connections it keeps
    pool.py     the workers: placement, stop routing, replacement, drain
    front.py    the front's HTTP application, answering for the whole runner
    relay.py    the front's /run and /stop, passed to their worker below FastAPI

With ``RUNNER_WORKERS=1`` none of this runs: the process is the runner, as before.
"""

from teamrunner.workers.cores import usable_cores, worker_count

# The front and the worker side (``front.serve_front``, ``process.become_worker``) are
# imported where they are used: a single runner, the common case, never loads them.
__all__ = ["usable_cores", "worker_count"]
