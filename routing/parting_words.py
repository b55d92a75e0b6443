"""A member's parting words: what it says as it hands the call over.

The voice router lets a transition's calls pass the previous voice
(``routing/tts.py``), so the next member's LLM answers while the line the
previous member said with them ("Sure, one moment.") is still being made.
pipecat's context aggregator writes that line into the conversation only as
it is played, after the transition's result, so the next member's first
request would not see it, and could promise what was just promised or
greet a caller who was just told to hold. ``PartingWords`` keeps the line,
as its LLM wrote it, for that first request: the LLM router gives the next
member the conversation with the line just before the response's calls,
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
from collections.abc import Iterable
from typing import Any

from pipecat.frames.frames import LLMContextFrame
from pipecat.processors.aggregators.llm_context import LLMContext

_SPACE = re.compile(r"\s+")


class PartingWords:
    """The lines of transferring members whose response's calls passed their voice."""

    def __init__(self) -> None:
        # Each call's id to its response's calls and the line said with them.
        self._lines: dict[str, tuple[frozenset[str], str]] = {}

    def passed(self, tool_call_ids: Iterable[str], line: str) -> None:
        """A response's calls (``tool_call_ids``) went ahead of ``line``, still to be said."""
        if line.strip():
            batch = frozenset(tool_call_ids)
            for tool_call_id in batch:
                self._lines[tool_call_id] = (batch, line)

    def forget(self) -> None:
        """A new response's calls have started: the lines of earlier ones are past use."""
        self._lines.clear()

    def completed(self, frame: LLMContextFrame) -> LLMContextFrame:
        """``frame``, or a copy whose conversation has the line its last results left out.

        Only a run on a conversation that ends with the result of one of a
        response's passed calls is given the line, once, before the first of
        them.
        """
        if not self._lines:
            return frame
        messages = frame.context.get_messages()
        last = messages[-1] if messages else None
        if not (isinstance(last, dict) and last.get("role") == "tool"):
            return frame
        passed = self._lines.get(str(last.get("tool_call_id")))
        if passed is None:
            return frame
        batch, line = passed
        for tool_call_id in batch:
            self._lines.pop(tool_call_id, None)
        first_call = _first_call_message(messages, batch)
        if first_call is None or _already_said(messages, line):
            return frame
        context = LLMContext(
            messages=[
                *messages[:first_call],
                {"role": "assistant", "content": line},
                *messages[first_call:],
            ],
            tools=frame.context.tools,
            tool_choice=frame.context.tool_choice,
        )
        return LLMContextFrame(context=context, speculation=frame.speculation)


def _first_call_message(messages: list[Any], tool_call_ids: frozenset[str]) -> int | None:
    """The index of the first assistant message making one of the calls ``tool_call_ids``."""
    for index, message in enumerate(messages):
        if isinstance(message, dict) and any(
            call.get("id") in tool_call_ids for call in message.get("tool_calls") or ()
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
