"""pipecat's Deepgram STT, able to say whether its socket is up and to reconnect now.

``DeepgramSTTService`` keeps its socket in ``_connection`` (None while no
socket is up) and reconnects with ``_do_reconnect`` (its own disconnect and
connect, the hook ``STTService._reconnect`` calls, without pipecat's backoff).
``DeepgramSTTSocket`` offers both under public names. Imported only when a
call uses Deepgram, so an unused vendor costs nothing.
"""

from __future__ import annotations

from pipecat.services.deepgram.stt import DeepgramSTTService


class DeepgramSTTSocket(DeepgramSTTService):
    """pipecat's Deepgram STT, with its socket's state and an immediate reconnect."""

    def socket_up(self) -> bool:
        """Whether a Deepgram socket is up (pipecat clears its connection once it is gone)."""
        return self._connection is not None

    async def reconnect_socket(self) -> None:
        """Close the socket if any and open a new one now, as pipecat's own reconnect does.

        Raises:
            ConnectionError: the new socket could not be opened.
        """
        await self._do_reconnect()
