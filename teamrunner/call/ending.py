"""Ending a call from inside: a last line, heard whole, then an ``EndFrame``.

Three things end a call this way: the model calling ``end_call`` (the
member's goodbye), ``idle.IdleNudges`` giving up on a silent caller (the
hang-up line), and a remote policy answering ``end`` (its ``say``, if any:
without a line, the call ends once what was already said has been heard).
``CallEnding`` says the line, waits until the media server will have played
it (``lines.Lines.say_and_wait``), and only then queues the ``EndFrame``
(through ``Lines``, at the head of the pipeline): the input transport is at
the head, so an ``EndFrame`` queued with the line would close the caller's
socket before a word was heard. The
``EndFrame`` then closes both sockets in order and the session releases
everything, as for any call that ends itself.

From the moment the call starts ending, the caller is muted
(``EndingMute``, one of pipecat's user mute strategies): a barge-in would
flush the last line from the media server, and a new turn would have nobody
to answer it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from loguru import logger
from pipecat.flows import NO_RESPONSE, FlowArgs, FlowManager, FlowsFunctionSchema
from pipecat.frames.frames import EndFrame, Frame
from pipecat.turns.user_mute import BaseUserMuteStrategy

from teamrunner.call.functions import offered
from teamrunner.call.lines import Lines
from teamrunner.observe.journal import CallJournal, EndReason
from teamrunner.plan import END_CALL_FUNCTION, EndCallPlan

# How long a last line may take to be heard, beyond the voice's own timeout:
# generously more than any voice takes to say a character.
SECS_PER_CHAR = 0.1
# Once the line has played by the runner's reckoning, a moment more for the
# audio's way to the media server, so its last word is not cut off.
GRACE_SECS = 0.25

_ENDING_RESULT = {"status": "ending", "note": "the goodbye is being said; say nothing more"}


class EndingMute(BaseUserMuteStrategy):
    """Mutes the caller once the call is ending."""

    def __init__(self) -> None:
        super().__init__()
        self.muted = False

    async def process_frame(self, frame: Frame) -> bool:
        return self.muted


class CallEnding:
    """Ends the call once a last line has been heard; only the first request counts.

    Args:
        lines: Says the last line.
        journal: Told why the call ended.
        voice_timeout_secs: How long the voice may stay silent with words to say.
    """

    def __init__(self, lines: Lines, journal: CallJournal, *, voice_timeout_secs: float) -> None:
        self._lines = lines
        self._journal = journal
        self._voice_timeout = voice_timeout_secs
        self.mute = EndingMute()
        self._task: asyncio.Task[None] | None = None

    @property
    def ending(self) -> bool:
        return self._task is not None

    def end_after(self, line: str | None, reason: EndReason, detail: str) -> None:
        """Say ``line`` and end the call once it has been heard; returns at once.

        With no ``line``, the call ends once what was said before has been heard.
        """
        if self._task is not None:
            return
        self.mute.muted = True
        self._journal.ending(reason, detail)
        self._task = asyncio.get_running_loop().create_task(self._end(line, detail))

    async def _end(self, line: str | None, detail: str) -> None:
        timeout = self._voice_timeout + SECS_PER_CHAR * len(line or "")
        if await self._lines.say_and_wait(line, remember=True, timeout=timeout):
            await asyncio.sleep(GRACE_SECS if self._lines.speaks else 0.0)
        else:
            logger.warning(f"the last line was not heard within {timeout:g}s; ending anyway")
        logger.info(f"ending the call: {detail}")
        await self._lines.queue([EndFrame(reason=detail)])

    def hang_up(self, line: str) -> None:
        """The caller stayed silent through every nudge (``IdleNudges``)."""
        self.end_after(line, EndReason.CALLER_IDLE, "the caller stayed silent after every nudge")

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def flows_function(self, plan: EndCallPlan) -> FlowsFunctionSchema:
        """``end_call`` in a member's node: the call stays put and the LLM says nothing."""

        async def end_call(args: FlowArgs, flow_manager: FlowManager) -> Any:
            self.end_after(plan.goodbye, EndReason.BOT_ENDED, "the model called end_call")
            return _ENDING_RESULT, NO_RESPONSE

        # Returns at once (the ending is scheduled), so nothing is left to cancel.
        return offered(END_CALL_FUNCTION, plan.description, end_call)
