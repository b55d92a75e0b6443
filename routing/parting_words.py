"""A member's parting words: what it says as it hands the call over.

The voice router lets a transition's calls pass the previous voice
(``routing/tts.py``), so the next member's LLM answers while the line the
previous member said with them ("Sure, one moment.") is still being made.
pipecat's context aggregator writes that line into the conversation only as
it is played, after the transition's result, so the next member's first
request would not see it, and could promise what was just promised or
greet a caller who was just told to hold. ``PartingWords`` keeps the line,
as its LLM wrote it, for that first request: the LLM router gives the next
member the conversation with the line just before the transition's call,
where it was said, and where the request had it when the result waited for
the voice (``RoutingLLMService``). Not after the result, where the
aggregator later writes it: a request that ends with the assistant's words
asks some models to carry on with them. The conversation itself is never
changed here; only the request that would miss the line is given a copy
that has it.

A line the conversation already holds (its voice made and played it before
the transition's result arrived) is not added again.
"""

from __future__ import annotations

import re
from typing import Any

from pipecat.frames.frames import LLMContextFrame
from pipecat.processors.aggregators.llm_context import LLMContext

_SPACE = re.compile(r"\s+")


class PartingWords:
    """The lines of transferring members whose transition's calls passed their voice."""

    def __init__(self) -> None:
        self._lines: dict[str, str] = {}

    def passed(self, tool_call_id: str, line: str) -> None:
        """The transition called as ``tool_call_id`` went ahead of ``line``, still to be said."""
        if line.strip():
            self._lines[tool_call_id] = line

    def forget(self) -> None:
        """A new response's calls have started: the lines of earlier ones are past use."""
        self._lines.clear()

    def completed(self, frame: LLMContextFrame) -> LLMContextFrame:
        """``frame``, or a copy whose conversation ends with the line its last result left out.

        Only a run on a conversation that ends with a passed transition's
        result is given the line, once.
        """
        if not self._lines:
            return frame
        messages = frame.context.get_messages()
        last = messages[-1] if messages else None
        if not (isinstance(last, dict) and last.get("role") == "tool"):
            return frame
        tool_call_id = str(last.get("tool_call_id"))
        line = self._lines.pop(tool_call_id, None)
        call = _call_message(messages, tool_call_id)
        if line is None or call is None or _already_said(messages, line):
            return frame
        context = LLMContext(
            messages=[*messages[:call], {"role": "assistant", "content": line}, *messages[call:]],
            tools=frame.context.tools,
            tool_choice=frame.context.tool_choice,
        )
        return LLMContextFrame(context=context, speculation=frame.speculation)


def _call_message(messages: list[Any], tool_call_id: str) -> int | None:
    """The index of the assistant message that made the call ``tool_call_id``."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and any(
            call.get("id") == tool_call_id for call in message.get("tool_calls") or ()
        ):
            return index
    return None


def _already_said(messages: list[Any], line: str) -> bool:
    """Whether the assistant said ``line`` since the caller last spoke."""
    wanted = _SPACE.sub(" ", line).strip()
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            return False
        content = message.get("content")
        if (
            message.get("role") == "assistant"
            and isinstance(content, str)
            and _SPACE.sub(" ", content).strip() == wanted
        ):
            return True
    return False
