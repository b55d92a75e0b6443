"""What the browser is told about a ``teamrunner talk`` call, and what the terminal prints.

``TalkEvents`` is an observer handed to the call builder. It follows the
conversation as the call decides it, the order in which pipecat-manager's
events come: the caller's lines, each member's lines (its replies, and the
lines the runner says for it: greeting, handoff line, nudge, goodbye) and
each handoff, a handoff line being the member's who says it, before the
switch. The terminal gets one line each, and the talk page one RTVI
``server-message`` each, all from this one observer so they arrive in order:
``{"type": "member", "member": "Greeter"}`` when the call starts, then
``{"type": "caller", "text": ...}``, ``{"type": "line", "member":
"Greeter", "text": ...}`` and ``{"type": "handoff", "from": "Greeter",
"to": "Billing", "function": "transfer_to_billing"}``.

It also sends what pipecat's prebuilt client draws its conversation from
and the call's own RTVI observer (``teamrunner.manager.events``: only what
pipecat-manager reads) does not: the bot's words as they are spoken
(``bot-output``), who is speaking, and the LLM's function calls
(``llm-function-call-*``), a handoff among them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pipecat.frames.frames import (
    FunctionCallResultFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIObserver, RTVIObserverParams, RTVIProcessor
from pipecat.processors.frameworks.rtvi import models as rtvi
from pipecat.processors.frameworks.rtvi.observer import RTVIFunctionCallReportLevel
from pipecat.utils.asyncio.task_manager import BaseTaskManager
from pydantic import BaseModel

from teamrunner.frames import SpokenLineFrame
from teamrunner.plan import CallPlan, TransitionPlan

# What the call's own observer does not send (the bot's LLM text it does: sending
# it here too would show each line twice; and the caller's, below).
BROWSER_MESSAGES = RTVIObserverParams(
    bot_llm_enabled=False,
    user_llm_enabled=False,
    bot_output_enabled=True,
    bot_tts_enabled=False,
    bot_speaking_enabled=True,
    user_speaking_enabled=True,
    metrics_enabled=False,
    function_call_report_level={"*": RTVIFunctionCallReportLevel.FULL},
)

# Sent by the call's own observer already (pipecat has no switch for it but a deprecated one).
SENT_BY_THE_CALL = frozenset({"user-transcription"})

# The result a transition function hands the LLM when the handoff happened (team_flow).
TRANSFERRED = "transferred"


class TalkEvents(BaseObserver):
    """Tells the talk page and the terminal the conversation; sends the prebuilt client its own.

    Not itself an RTVI observer: pipecat's worker installs the call's own (the
    one pipecat-manager's messages come from) only while no other is among its
    observers. It makes the prebuilt client's messages with one of pipecat's, inside.

    Args:
        plan: The call, for its members and their transitions.
        output: The transport's output, where the messages go (the peer's data channel).
        echo: Prints one line of the conversation.
    """

    def __init__(self, plan: CallPlan, output: FrameProcessor, echo: Callable[[str], None]) -> None:
        super().__init__()
        self._rtvi = _BrowserMessages(self)
        self._plan = plan
        self._output = output
        self._echo = echo
        self.member = plan.start_member
        # A handoff whose line the current member is still to say.
        self._handoff_line: TransitionPlan | None = None
        self._last_line = ""
        self._started = time.monotonic()
        self._reply: list[str] = []
        self.messages: list[dict[str, Any]] = []

    async def setup(self, task_manager: BaseTaskManager) -> None:
        await super().setup(task_manager)
        await self._rtvi.setup(task_manager)

    async def cleanup(self) -> None:
        await self._rtvi.cleanup()
        await super().cleanup()

    async def on_pipeline_started(self) -> None:
        await self._rtvi.on_pipeline_started()
        self._started = time.monotonic()
        await self._tell({"type": "member", "member": self.member.name})

    async def on_push_frame(self, data: FramePushed) -> None:
        await self._rtvi.on_push_frame(data)
        frame = data.frame
        # A frame pushed both ways is two frames: the downstream one counts.
        if not data.first_push or (
            frame.broadcast_sibling_id is not None and data.direction != FrameDirection.DOWNSTREAM
        ):
            return
        if isinstance(frame, TranscriptionFrame):
            self._say("caller", frame.text)
            await self._tell({"type": "caller", "text": frame.text})
        elif isinstance(frame, SpokenLineFrame):
            await self._line(frame.text)
            self._last_line = frame.text
            pending = self._handoff_line
            if pending is not None and frame.text == pending.handoff_message:
                self._handoff_line = None
                await self._switch(pending)
        elif isinstance(frame, LLMFullResponseStartFrame):
            self._reply = []
        elif isinstance(frame, LLMTextFrame):
            self._reply.append(frame.text)
        elif isinstance(frame, LLMFullResponseEndFrame):
            reply = "".join(self._reply).strip()
            self._reply = []
            if reply:
                await self._line(reply)
        elif isinstance(frame, FunctionCallResultFrame):
            await self._transition_called(frame)

    async def _transition_called(self, frame: FunctionCallResultFrame) -> None:
        result = frame.result
        if not (isinstance(result, dict) and result.get("status") == TRANSFERRED):
            return
        transition = next(
            (t for t in self.member.transitions if t.wire_name == frame.function_name), None
        )
        if transition is None:
            return
        if transition.handoff_message and transition.handoff_message != self._last_line:
            # The current member says it first, in its own voice (team_flow).
            self._handoff_line = transition
        else:
            await self._switch(transition)

    async def _switch(self, transition: TransitionPlan) -> None:
        previous, self.member = self.member, self._plan.members[transition.next_member_id]
        self._say("**", f"{previous.name} -> {self.member.name} ({transition.wire_name})")
        await self._tell(
            {
                "type": "handoff",
                "from": previous.name,
                "to": self.member.name,
                "function": transition.wire_name,
            }
        )

    async def _line(self, text: str) -> None:
        self._say(self.member.name, text)
        await self._tell({"type": "line", "member": self.member.name, "text": text})

    async def _tell(self, data: dict[str, Any]) -> None:
        """An RTVI ``server-message`` for the talk page."""
        await self.send(rtvi.ServerMessage(data=data))

    async def send(self, model: BaseModel, exclude_none: bool = True) -> None:
        """Send an RTVI message straight to the output transport, as the call's observer does."""
        message = model.model_dump(exclude_none=exclude_none)
        if message.get("type") in SENT_BY_THE_CALL:
            return
        self.messages.append(message)
        await self._output.queue_frame(OutputTransportMessageUrgentFrame(message=message))

    def _say(self, who: str, text: str) -> None:
        self._echo(f"[{time.monotonic() - self._started:7.2f}s] {who:<12}: {text.strip()}")


class _BrowserMessages(RTVIObserver):
    """pipecat's RTVI observer making ``BROWSER_MESSAGES``, sending them through ``TalkEvents``."""

    def __init__(self, events: TalkEvents) -> None:
        # pipecat's observer asks its processor which protocol the client speaks. The
        # call's processor is made inside the call builder, so this one stands in for
        # it and says the current one: its bot-output messages carry the fields the
        # prebuilt client reads (text, spoken) in either version.
        super().__init__(RTVIProcessor(), params=BROWSER_MESSAGES)
        self._events = events

    async def send_rtvi_message(self, model: BaseModel, exclude_none: bool = True) -> None:
        await self._events.send(model, exclude_none)
