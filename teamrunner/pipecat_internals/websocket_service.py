"""pipecat's websocket services as the runner builds them: connected when opened, one TLS context.

pipecat's Cartesia and ElevenLabs voices open their sockets through
``WebsocketService._websocket_connect``, which gives ``websockets`` no TLS
context, so the event loop makes a new default one (loading the whole CA
bundle, about 25 ms of CPU) for every socket. ``OverSharedTLS`` hands it the
process's one context (``teamrunner.tls``) for a ``wss://`` socket that
brings none of its own. ``runner_websocket_service`` puts it, and
``ConnectsWhenOpened``, before a pipecat service class (and, before a voice,
``teamrunner.pipecat_internals.audio_contexts.WithReadyAudioContexts``).
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from pipecat.services.tts_service import TTSService

from teamrunner.pipecat_internals.audio_contexts import WithReadyAudioContexts
from teamrunner.pipecat_internals.connecting import ConnectsWhenOpened
from teamrunner.tls import client_context

ServiceT = TypeVar("ServiceT")


class OverSharedTLS:
    """Put before a pipecat ``WebsocketService``'s class: its ``wss://`` sockets share a context."""

    async def _websocket_connect(self, uri: str, **kwargs: Any) -> Any:
        if uri.startswith("wss://"):
            kwargs.setdefault("ssl", client_context())
        return await super()._websocket_connect(uri, **kwargs)  # type: ignore[misc]


@cache
def runner_websocket_service(service_class: type[ServiceT]) -> type[ServiceT]:
    """``service_class`` with ``ConnectsWhenOpened`` and ``OverSharedTLS`` before it, made once.

    A voice (a ``TTSService``) also gets ``WithReadyAudioContexts``. The class
    keeps its name, so its processors are named as pipecat's are.
    """
    namespace: dict[str, Any] = {
        "__doc__": service_class.__doc__,
        "__module__": __name__,
    }
    voice: tuple[type, ...] = (
        (WithReadyAudioContexts,) if issubclass(service_class, TTSService) else ()
    )
    bases = (ConnectsWhenOpened, OverSharedTLS, *voice, service_class)
    return type(service_class.__name__, bases, namespace)
