"""Nudging a caller who has gone quiet, and hanging up on one who stays quiet.

``IdleNudges`` (just after ``lines.Lines``, past the output transport)
runs pipecat's ``UserIdleController`` (the idle timer of pipecat's user
aggregator) and decides what it is fed, because two of the aggregator's own
signals are wrong here:

* the timer starts when the bot stops speaking, which pipecat takes from the
  output transport; output is unpaced, so that is when the last audio was
  *sent*, seconds before the caller has *heard* it. ``IdleNudges`` passes the
  stop on when the media server will have played it (``playout.PlayoutClock``);
* a call with no voice never "speaks", so the end of the bot's text (a reply
  or a line) counts as its stop.

What the controller already gets right is kept: caller speech cancels the
timer, and so does a tool call until its result is in. Each time the timer
runs out, the next nudge is said; after the last, the hang-up line is said
and the call ends once it has been heard. Caller speech starts the nudges
over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    StartFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor, FrameProcessorSetup
from pipecat.processors.frameworks.rtvi import RTVISendTextFrame
from pipecat.turns.user_idle_controller import UserIdleController

from teamrunner.call.lines import Lines
from teamrunner.frames import SpokenLineFrame
from teamrunner.plan import IdlePlan

_CALLER_FRAMES = (
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    FunctionCallsStartedFrame,
    FunctionCallResultFrame,
    FunctionCallCancelFrame,
)


class IdleNudges(FrameProcessor):
    """Says the idle nudges in order as the caller stays quiet, then hangs up.

    Args:
        plan: The nudges, their timeout and the hang-up line.
        lines: Says the nudges.
        hang_up: Ends the call once it has said the given line.
        waits_for_caller: Whether the call opens in silence, waiting for the
            caller (then the silence counts from the start).
    """

    def __init__(
        self,
        plan: IdlePlan,
        lines: Lines,
        hang_up: Callable[[str], None],
        *,
        waits_for_caller: bool,
    ) -> None:
        super().__init__(name="IdleNudges")
        self._plan = plan
        self._lines = lines
        self._hang_up = hang_up
        self._waits_for_caller = waits_for_caller
        self.level = 0  # nudges said since the caller last spoke
        self._hung_up = False
        self._heard: asyncio.Task[None] | None = None
        self._timer = UserIdleController(user_idle_timeout=plan.timeout_secs)
        self._timer.add_event_handler("on_user_turn_idle", self._on_idle)

    async def setup(self, setup: FrameProcessorSetup) -> None:  # type: ignore[override]
        await super().setup(setup)
        await self._timer.setup(setup)

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._cancel_heard()
        await self._timer.cleanup()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, StartFrame):
            if self._waits_for_caller:
                await self._timer.wait_for_user()
        elif isinstance(frame, (EndFrame, CancelFrame)):
            await self._cancel_heard()
            await self._timer.stop()
        elif direction == FrameDirection.DOWNSTREAM:
            await self._downstream(frame)

    async def _downstream(self, frame: Frame) -> None:
        if self._lines.speaks:
            # The output transport's speaking frames, pushed both ways.
            if isinstance(frame, BotStartedSpeakingFrame):
                await self._cancel_heard()
                await self._timer.process_frame(BotStartedSpeakingFrame())
            elif isinstance(frame, BotStoppedSpeakingFrame):
                self._stop_when_heard()
        if isinstance(frame, RTVISendTextFrame):
            self.level = 0  # typed words are the caller's too
        elif isinstance(frame, _CALLER_FRAMES):
            if isinstance(frame, UserStartedSpeakingFrame):
                self.level = 0
            await self._timer.process_frame(frame)
        elif not self._lines.speaks:
            # No voice: the bot's text is all the caller gets, and it is instant.
            if isinstance(frame, (LLMFullResponseStartFrame, SpokenLineFrame)):
                await self._timer.process_frame(BotStartedSpeakingFrame())
            if isinstance(frame, (LLMFullResponseEndFrame, SpokenLineFrame)):
                await self._timer.process_frame(BotStoppedSpeakingFrame())

    def _stop_when_heard(self) -> None:
        """Tell the timer the bot stopped once the caller has heard its last audio."""
        delay = self._lines.secs_until_heard()

        async def heard() -> None:
            if delay > 0:
                await asyncio.sleep(delay)
            self._heard = None
            await self._timer.process_frame(BotStoppedSpeakingFrame())

        if self._heard is None or self._heard.done():
            self._heard = self.create_task(heard(), name="idle-heard")

    async def _cancel_heard(self) -> None:
        if self._heard is not None:
            task, self._heard = self._heard, None
            await self.cancel_task(task)

    async def _on_idle(self, timer: UserIdleController) -> None:
        if self._hung_up:
            return
        self.level += 1
        if self.level <= len(self._plan.nudges):
            await self._lines.say(self._plan.nudges[self.level - 1], remember=True)
            return
        self._hung_up = True
        self._hang_up(self._plan.hangup_message)
