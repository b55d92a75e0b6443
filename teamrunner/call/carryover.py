"""What the next member's LLM sees after a transition: a transition's ``context`` mode.

``append`` (the default) carries the whole conversation over. ``reset``
gives the next member its own prompt and the caller's last turn
(``caller_last_turn``). ``summary`` gives it its own prompt and a short
summary of the conversation so far, written by the next member's LLM with
pipecat's summarization prompt and transcript format, as pipecat's own
context summarizer writes one (``summary_message``).

Either replaces the conversation as it stood when the next member's node was
entered, and only that (``replacing``): a caller's turn written while the
summary was being made, or while the replacement was on its way, is kept
after it, so what the caller said during the handoff reaches the next member.

A summary is one more LLM round trip at a handoff, so it is bounded in time
(the handoff line, if any, is being said meanwhile). It is made out of band,
with ``LLMService.run_inference``, rather than by pushing an
``LLMSummarizeContextFrame``: a summary that fails there is reported as an
error of the pipeline's LLM, which would make the caller hear the LLM
fallback line and tell pipecat-manager of an error the caller never met, and
its out-of-band variant says nothing at all when it fails, so the handoff
would wait out the whole bound. Here a failure or a timeout is known at once,
logged with its reason, and the handoff falls back to ``append``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.services.llm_service import LLMService
from pipecat.utils.context.llm_context_summarization import (
    DEFAULT_SUMMARIZATION_PROMPT,
    LLMContextSummarizationUtil,
)

from teamrunner.errors import SummaryError

SUMMARY_PROMPT = (
    DEFAULT_SUMMARIZATION_PROMPT
    + "\n\nKeep it short: a few sentences that a colleague taking over the call can act on."
)
SUMMARY_MAX_TOKENS = 300
# pipecat's own template for a summary put into a context.
SUMMARY_TEMPLATE = "Conversation summary: {summary}"


def replacing(
    replacement: list[dict[str, Any]], seen: Sequence[Any]
) -> Callable[[list[Any]], list[Any]]:
    """A transform of the conversation: ``replacement`` in place of the messages ``seen``.

    Messages are told apart by identity, so whatever was added since ``seen``
    was read is kept, after the replacement, in its order.
    """
    seen = list(seen)  # holds them, so their identities stay theirs

    def transform(messages: list[Any]) -> list[Any]:
        known = {id(m) for m in seen}
        return [*replacement, *(m for m in messages if id(m) not in known)]

    return transform


def caller_last_turn(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The caller's last turn (the last user message) as the whole of a new context."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user" and message.get("content"):
            return [{"role": "user", "content": message["content"]}]
    return []


async def summary_message(
    llm: LLMService, messages: Sequence[Any], timeout: float
) -> dict[str, Any]:
    """A short summary of ``messages`` by ``llm``, as the user message pipecat would insert.

    Raises:
        SummaryError: the LLM failed, answered nothing, or took longer than ``timeout``.
    """
    transcript = LLMContextSummarizationUtil.format_messages_for_summary(list(messages))
    if not transcript.strip():
        raise SummaryError("there is no conversation to summarize yet")
    request = LLMContext(
        messages=[{"role": "user", "content": f"Conversation history:\n{transcript}"}]
    )
    try:
        summary = await asyncio.wait_for(
            llm.run_inference(
                request, max_tokens=SUMMARY_MAX_TOKENS, system_instruction=SUMMARY_PROMPT
            ),
            timeout,
        )
    except TimeoutError:
        raise SummaryError(f"{llm.name} did not answer within {timeout:g}s") from None
    except Exception as e:
        raise SummaryError(f"{llm.name} failed: {type(e).__name__}: {e}") from e
    if not summary or not summary.strip():
        raise SummaryError(f"{llm.name} answered with no summary")
    return {"role": "user", "content": SUMMARY_TEMPLATE.format(summary=summary.strip())}
