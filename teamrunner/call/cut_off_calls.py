"""Function calls the caller cut off, settled in the context in order with their start.

pipecat's assistant aggregator learns of a function call when it starts
(``FunctionCallInProgressFrame``, which puts the call and an ``IN_PROGRESS``
result in the context) and when it ends: a result, or a
``FunctionCallCancelFrame`` when the caller talks over it. The start is an
ordinary frame, queued behind the words the LLM said before the call on their
way through the voice, and behind whatever waits in each processor's queue;
the cancel is a system frame and overtakes it, at any processor on the way,
the aggregator's own queue included. A cancel the aggregator gets first
settles nothing (pipecat 1.14 ignores it), and the start that follows leaves
the call ``IN_PROGRESS`` for good: the model is told a tool it never heard
back from is still running, and the aggregator counts the call as running,
which holds pipecat.flows back from every later transition of a team call.

``CutOffCalls`` sits just before the assistant aggregator and turns the cancel
of a synchronous call (the only kind this runner makes) into an ordinary
result frame, ``"CANCELLED"``, sent right behind the call's start, so the
aggregator always takes the start first and the call ends settled, with the
word pipecat itself uses. A call cancelled before it ever started sends no
start; it is settled the same way when the next call starts, since starts
arrive in the order they were sent. Every other frame passes untouched, in
order; an asynchronous call's cancel is left as pipecat sends it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipecat.frames.frames import (
    Frame,
    FunctionCallCancelFrame,
    FunctionCallFromLLM,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallResultProperties,
    FunctionCallsStartedFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

# What the context says of a call the caller cut off (pipecat's word for it).
CANCELLED = "CANCELLED"


@dataclass
class _CutOff:
    """A call cancelled before its start came by."""

    call: FunctionCallFromLLM
    cancel: FunctionCallCancelFrame


class CutOffCalls(FrameProcessor):
    """Settles each cancelled synchronous call behind its start; every other frame passes.

    It runs in direct mode: it only looks at the frames on their way to the
    assistant aggregator, so it adds no queue of its own to the pipeline.
    """

    def __init__(self) -> None:
        super().__init__(enable_direct_mode=True)
        self._announced: dict[str, FunctionCallFromLLM] = {}
        # Started calls not yet ended, and whether each is synchronous.
        self._running: dict[str, bool] = {}
        # Cancelled before their start came by, in the order cancelled.
        self._cut_off: dict[str, _CutOff] = {}

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, FunctionCallsStartedFrame):
                for call in frame.function_calls:
                    self._announced[call.tool_call_id] = call
            elif isinstance(frame, FunctionCallInProgressFrame):
                await self._started(frame)
                return
            elif isinstance(frame, FunctionCallCancelFrame):
                if await self._cancelled(frame):
                    return
            elif isinstance(frame, FunctionCallResultFrame) and _is_final(frame):
                self._running.pop(frame.tool_call_id, None)
        await self.push_frame(frame, direction)

    async def _cancelled(self, cancel: FunctionCallCancelFrame) -> bool:
        """Whether ``cancel`` was taken in, to be settled behind its call's start."""
        call = self._announced.pop(cancel.tool_call_id, None)
        synchronous = self._running.pop(cancel.tool_call_id, None)
        if synchronous:
            await self._settle(cancel)
            return True
        if synchronous is None and call is not None:
            self._cut_off[cancel.tool_call_id] = _CutOff(call, cancel)
            return True
        return False

    async def _started(self, start: FunctionCallInProgressFrame) -> None:
        cut_off = self._cut_off.pop(start.tool_call_id, None)
        if cut_off is None:
            # Calls cut off before this one started never started themselves.
            for never in list(self._cut_off.values()):
                self._cut_off.pop(never.call.tool_call_id)
                await self.push_frame(
                    FunctionCallInProgressFrame(
                        function_name=never.call.function_name,
                        tool_call_id=never.call.tool_call_id,
                        arguments=never.call.arguments,
                        cancel_on_interruption=True,
                    )
                )
                await self._settle(never.cancel)
            self._announced.pop(start.tool_call_id, None)
            self._running[start.tool_call_id] = start.cancel_on_interruption
            await self.push_frame(start)
            return
        await self.push_frame(start)
        if start.cancel_on_interruption:
            await self._settle(cut_off.cancel)
        else:
            await self.push_frame(cut_off.cancel)

    async def _settle(self, cancel: FunctionCallCancelFrame) -> None:
        """The cancelled call's result, as an ordinary frame behind its start.

        A cancel that asks for inference (a call's own timeout) leaves pipecat
        to decide when, as its cancel would; any other runs nothing.
        """
        quiet = None if cancel.run_llm else FunctionCallResultProperties(run_llm=False)
        await self.push_frame(
            FunctionCallResultFrame(
                function_name=cancel.function_name,
                tool_call_id=cancel.tool_call_id,
                arguments={},
                result=CANCELLED,
                properties=quiet,
            )
        )


def _is_final(result: FunctionCallResultFrame) -> bool:
    return result.properties is None or result.properties.is_final
