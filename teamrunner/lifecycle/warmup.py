"""Getting the process ready for its first call, in the background, while it already answers.

The HTTP API comes up in well under a second, but a call needs pipecat, the
provider SDKs and the speech models, which take seconds to import and load.
Kept on the path to the first ``/health``, they would make every restart of
the sidecar a window in which pipecat-manager's calls fail. So the runner
serves at once, and a ``WarmUp`` imports the call stack, readies the shared
OpenAI clients' HTTP stack (the default LLM's) and loads the models named in
``RUNNER_PRELOAD_MODELS`` in a worker thread: ``/ready`` says no until it is
done, and a ``/run`` that arrives before then waits for it instead of failing.
A first call of the default LLM then imports nothing; another vendor's
service is imported by the first call that uses it. It reads the proxy
settings once (``teamrunner.lifecycle.proxies``) and makes the process's TLS
contexts (``teamrunner.tls``), so that a call's sockets neither walk the
environment nor load a CA bundle when they open.

The warm-up also settles the heap (``settled_heap``). Importing the call
stack makes some half a million objects that live as long as the process,
and the garbage collector, counting them as they come, ran three full
collections over them while they were imported (a quarter of a second of
CPU, measured on this stack) and then, every so often during calls, a full
collection that walked them all again: a pause of 100–200 ms in which no
call's audio moved. So the collector is off while the warm-up imports and
loads, and what is there when it is done is frozen (``gc.freeze``): later
collections walk only what calls make.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import time
from collections.abc import Iterator, Sequence

from loguru import logger

from teamrunner import tls
from teamrunner.config import Settings
from teamrunner.errors import ConfigError
from teamrunner.lifecycle import proxies
from teamrunner.providers import warm_modules
from teamrunner.providers.resources import SharedResources
from teamrunner.speech.models import MODELS


def preload_names(setting: str) -> tuple[str, ...]:
    """``RUNNER_PRELOAD_MODELS`` as model names.

    Raises:
        ConfigError: naming a model the runner does not have.
    """
    names = tuple(n.strip() for n in setting.split(",") if n.strip())
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise ConfigError(
            f"RUNNER_PRELOAD_MODELS names {', '.join(unknown)}: not a speech model; "
            f"give any of {', '.join(MODELS)} (comma-separated), or leave it empty"
        )
    return names


# What a call imports: pipecat, the per-call assembly, and the default LLM's service
# (the provider registry imports each vendor's only when a call uses it; see call_modules).
CALL_MODULES = ("run", "pipecat.workers.runner", "teamrunner.providers.openai_compatible")


def call_modules(settings: Settings) -> tuple[str, ...]:
    """What this runner's first call imports: the call stack, and its providers' modules.

    The providers are those whose keys the runner holds (``warm_modules``), so the
    first call of a fresh process (the first caller after a deploy) imports
    nothing on the event loop that every call shares: importing Deepgram's and
    Cartesia's stacks there cost a first voice call about 170 ms.
    """
    return tuple(dict.fromkeys((*CALL_MODULES, *warm_modules(settings.keys))))


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """No garbage collection inside; on the way out, freeze every object made so far.

    Frozen objects are never walked by a collection again (the collector
    still runs on everything made later). For code that makes objects meant
    to live as long as the process, such as imports and loaded models.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


class WarmUp:
    """Imports a call's modules, readies its HTTP stack and loads speech models, once.

    Off the event loop.

    Args:
        modules: What a call imports (e.g. ``run``), imported in this order.
        shared: What the process's calls share: its OpenAI clients and speech models.
        preload: The models to load now.
    """

    def __init__(
        self, modules: Sequence[str], shared: SharedResources, preload: Sequence[str]
    ) -> None:
        self._modules = tuple(modules)
        self._shared = shared
        self._preload = tuple(preload)
        self._done = asyncio.Event()
        self.failure: str | None = None
        self.seconds: float | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        return self._done.is_set() and self.failure is None

    def start(self) -> None:
        """Begin warming up in the background (the event loop keeps serving)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def wait(self) -> None:
        """Return once warm; raise ``RuntimeError`` naming what failed if warming failed."""
        self.start()
        await self._done.wait()
        if self.failure is not None:
            raise RuntimeError(self.failure)

    async def _run(self) -> None:
        started = time.monotonic()
        try:
            await asyncio.to_thread(self._warm)
        except Exception as e:  # the process stays up; /ready and /run say what failed
            self.failure = f"warming up failed: {type(e).__name__}: {e}"
            logger.error(self.failure)
        else:
            self.seconds = time.monotonic() - started
            loaded = ", ".join(self._preload) or "no speech models"
            logger.info(f"warm in {self.seconds:.2f}s: call modules imported, {loaded} loaded")
        finally:
            self._done.set()

    def _warm(self) -> None:
        with settled_heap():
            for module in self._modules:
                importlib.import_module(module)
            self._shared.openai_clients.prepare()
            self._shared.models.preload(self._preload)
            proxies.read_once()
            tls.client_context()
            tls.httpx_context()
            tls.httpx2_context()

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task})
