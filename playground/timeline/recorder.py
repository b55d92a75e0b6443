"""Recording one call's moments from its frames: ``CallTimeline``, a pipecat observer.

``CallTimeline`` is handed to a call's pipeline worker like any observer
(``run.build_call(..., observers=[timeline])``) and notes, at each frame's
first push and on the pipeline's clock, the moments a designer wants to
see: the caller's speech as the VAD heard it (moved back by the VAD's own
start and stop delays, to when the caller really started and stopped), the
end of the caller's turn, each transcript (in a text session, each message
the caller types: RTVI's ``send-text``, as the eval harness sends it), each
LLM request with its first byte, its end and what it wrote, each function call and its result, a
handoff (a transition function whose result says the call was transferred),
the runner's own lines (``SpokenLineFrame``; a transition's handoff line in
the voice of the member who called it), and each stretch of synthesized
speech with its words, its first audio and when the caller hears it.
Nothing here interprets the moments: ``turns.py`` cuts them into turns and
measures them.

When the caller hears the bot is worked out here, as
``teamrunner.call.playout`` works it out for the runner: bot audio is
played back to back at real time from when the voice made it, and an
interruption drops what was not yet played. So the timeline is the call as
the runner saw it, for any transport (pipecat-manager's sockets, the eval
socket, WebRTC), with no party on the other end needed to record it. A
remote policy's handoffs are not drawn as handoffs (its tools are shown as
calls).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipecat.frames.frames import (
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMMessagesAppendFrame,
    LLMTextFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.aggregators.llm_response_universal import LLMAssistantAggregator
from pipecat.processors.frame_processor import FrameDirection
from pipecat.processors.frameworks.rtvi import RTVIProcessor
from pipecat.services.tts_service import TTSService

from teamrunner.call.playout import PlayoutClock
from teamrunner.frames import SpokenLineFrame
from teamrunner.plan import CallPlan

NANOS = 1_000_000_000
# What a voice makes.
_VOICE = (TTSStartedFrame, TTSAudioRawFrame, TTSTextFrame, TTSStoppedFrame)
# Frames pipecat broadcasts: pushed downstream and upstream, as two frames.
_BROADCAST = (
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    InterruptionFrame,
)


@dataclass
class Moment:
    """One thing that happened on the call, in seconds on the pipeline's clock.

    Attributes:
        at: When it happened.
        kind: What happened (``caller-start``, ``llm-request``, ``tts-audio``, ...).
        member: The member who had the call then (for a voice: whose voice spoke).
        text: What was said or transcribed, or a function's name.
        data: What else there is to show (a function's arguments and result, a
            stretch of audio's playout ``end``).
    """

    at: float
    kind: str
    member: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


class CallTimeline(BaseObserver):
    """Records a call's moments; ``write`` draws them as a self-contained HTML page.

    Args:
        plan: The call's plan: its members' names and which functions hand the call on.
    """

    def __init__(self, plan: CallPlan) -> None:
        super().__init__(observe_every_push=False)
        self.plan = plan
        self.moments: list[Moment] = []
        self._member = plan.start_member_id
        # Transition functions by wire name: where each hands the call.
        self._transitions = {
            t.wire_name: t.next_member_id for m in plan.members.values() for t in m.transitions
        }
        self._handoff_lines = {
            t.wire_name: t.handoff_message
            for m in plan.members.values()
            for t in m.transitions
            if t.handoff_message
        }
        self._calls: set[str] = set()
        self._results: set[str] = set()
        # The handoff line of the transition called last, and who called it, until it is said.
        self._handoff_line: tuple[str, str] | None = None
        self._playout = PlayoutClock()
        self._voice: str | None = None  # whose voice the current stretch of speech is
        self._first_audio = False
        self._responding = False
        self._first_text = False
        self._reply = ""  # what the LLM has written of its response so far
        self._line_voice: str | None = None  # the voice of a handoff line on its way
        self._speech: Moment | None = None  # the current stretch of speech, from its start
        self._heard: Moment | None = None  # what the caller hears of the current stretch

    @property
    def member(self) -> str:
        """The member who has the call now."""
        return self._member

    async def on_push_frame(self, data: FramePushed) -> None:
        frame = data.frame
        now = data.timestamp / NANOS
        if isinstance(frame, _BROADCAST) and data.direction != FrameDirection.DOWNSTREAM:
            return  # pipecat sends these both ways, as two frames: one is enough
        if isinstance(frame, _VOICE) and not isinstance(data.source, TTSService):
            # The voice's own, not the copies made after it: the output transport sends
            # audio on in chunks of its own, and ``call.heard`` a sentence as its words.
            return
        if isinstance(frame, VADUserStartedSpeakingFrame):
            self._note(now - frame.start_secs, "caller-start", data={"vad": now})
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._note(now - frame.stop_secs, "caller-stop", data={"vad": now})
        elif isinstance(frame, UserStartedSpeakingFrame):
            self._note(now, "turn-start")
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._note(now, "turn-end")
        elif isinstance(frame, TranscriptionFrame):
            self._note(now, "transcript", frame.text.strip())
        elif isinstance(frame, LLMMessagesAppendFrame) and isinstance(data.source, RTVIProcessor):
            # The caller typed it (RTVI's send-text): the words as the team gets them.
            typed = " ".join(
                str(m.get("content", ""))
                for m in frame.messages
                if isinstance(m, dict) and m.get("role") == "user"
            ).strip()
            if typed:
                self._note(now, "transcript", typed)
        elif isinstance(frame, LLMContextFrame) and _asks_the_llm(data):
            self._note(now, "llm-request")
        elif isinstance(frame, LLMFullResponseStartFrame):
            self._responding, self._first_text, self._reply = True, False, ""
        elif isinstance(frame, LLMTextFrame) and self._responding:
            if not self._first_text:
                self._first_text = True
                self._note(now, "llm-first-byte", frame.text)
            self._reply += frame.text
        elif isinstance(frame, LLMFullResponseEndFrame) and self._responding:
            self._responding = False
            self._note(now, "llm-end", self._reply.strip())
        elif isinstance(frame, FunctionCallInProgressFrame):
            self._call_started(now, frame)
        elif isinstance(frame, FunctionCallResultFrame):
            self._call_returned(now, frame)
        elif isinstance(frame, SpokenLineFrame):
            # A transition queues its handoff line before it switches the voice, and
            # the line sets out after the switch: it is in the voice of the member
            # who called the transition.
            line, voice = self._handoff_line or (None, None)
            self._line_voice = voice if frame.text == line else None
            if self._line_voice is not None:
                self._handoff_line = None
            kind = "line" if self._line_voice is None else "handoff-line"
            self._note(now, kind, frame.text)
        elif isinstance(frame, TTSStartedFrame):
            handoff = self._line_voice is not None
            self._voice, self._first_audio = self._line_voice or self._member, False
            self._speech = self._note(
                now, "tts-start", member=self._voice, data={"handoff": handoff}
            )
            self._line_voice = None
        elif isinstance(frame, TTSTextFrame) and self._speech is not None:
            # The words the voice says, as it says them: what the caller hears.
            self._speech.text = f"{self._speech.text} {frame.text.strip()}".strip()
        elif isinstance(frame, TTSAudioRawFrame):
            self._audio(now, frame)
        elif isinstance(frame, TTSStoppedFrame):
            self._note(now, "tts-stop", member=self._voice)
            self._speech = None
        elif isinstance(frame, InterruptionFrame):
            self._interrupted(now)

    def _call_started(self, now: float, frame: FunctionCallInProgressFrame) -> None:
        if frame.tool_call_id in self._calls:
            return  # the same call, pushed the other way too
        self._calls.add(frame.tool_call_id)
        transition = frame.function_name in self._transitions
        line = self._handoff_lines.get(frame.function_name)
        if line:
            self._handoff_line = (line, self._member)
        self._note(
            now,
            "function-call",
            frame.function_name,
            data={
                "id": frame.tool_call_id,
                "arguments": frame.arguments,
                "transition": transition,
            },
        )

    def _call_returned(self, now: float, frame: FunctionCallResultFrame) -> None:
        if frame.tool_call_id in self._results:
            return
        self._results.add(frame.tool_call_id)
        self._note(
            now,
            "function-result",
            frame.function_name,
            data={"id": frame.tool_call_id, "result": _plain(frame.result)},
        )
        target = self._transitions.get(frame.function_name)
        result = frame.result if isinstance(frame.result, dict) else {}
        if target is not None and result.get("status") == "transferred":
            previous, self._member = self._member, target
            self._note(now, "handoff", frame.function_name, data={"from": previous, "to": target})

    def _interrupted(self, now: float) -> None:
        """What had not been played is dropped (pipecat interrupts at every turn's start)."""
        cut = self._playout.ends_at > now
        self._playout.flush(now)
        if self._heard is not None and self._heard.data["end"] > now:
            self._heard.data["end"] = max(now, self._heard.at)
        self._heard = None
        if cut:
            self._note(now, "barge-in")

    def _audio(self, now: float, frame: TTSAudioRawFrame) -> None:
        secs = len(frame.audio) / (2 * frame.sample_rate * frame.num_channels)
        start, end = self._playout.add(secs, now)
        if not self._first_audio:
            self._first_audio = True
            self._note(now, "tts-first-audio", member=self._voice)
            self._heard = self._note(start, "heard", member=self._voice, data={"end": end})
        elif self._heard is not None:
            self._heard.data["end"] = end

    def _note(
        self,
        at: float,
        kind: str,
        text: str = "",
        *,
        member: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> Moment:
        moment = Moment(at, kind, member or self._member, text, data or {})
        self.moments.append(moment)
        return moment

    def write(self, path: Path, *, title: str) -> Path:
        """Write the call as a self-contained HTML timeline at ``path``; returns ``path``."""
        from playground.timeline.page import page
        from playground.timeline.turns import cut

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page(title, cut(self.moments, self.plan), self.plan))
        return path


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it (a function's result may be any object)."""
    try:
        json.dumps(value)
    except TypeError:
        return str(value)
    return value


def _asks_the_llm(data: FramePushed) -> bool:
    """Whether a context frame is on its way to the LLM (a request).

    The user's aggregator sends it down to the LLM; after a function's result the
    assistant's aggregator sends it back up; what it sends down goes nowhere.
    """
    return data.direction == FrameDirection.UPSTREAM or not isinstance(
        data.source, LLMAssistantAggregator
    )
