"""A function call the caller cut off is settled in the context, however the frames came.

pipecat's own assistant aggregator is run behind ``CutOffCalls`` on pipecat's
``run_test``, and given a cut-off call's frames in the orders a pipeline can
deliver them. Afterwards no call is left running, and each call in the
context has a result. A call ended by a call with a team, where a cancel
overtakes the call's start on its way through a voice, is in
``tests/test_transitions.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pipecat.frames.frames import (
    Frame,
    FunctionCallCancelFrame,
    FunctionCallFromLLM,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    LLMContextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMAssistantAggregator,
    LLMContextAggregatorPair,
)
from pipecat.tests.utils import run_test

from teamrunner.call.cut_off_calls import CutOffCalls

EMAIL = {"to": "ann@example.com"}


def started(*ids: str) -> FunctionCallsStartedFrame:
    calls = [FunctionCallFromLLM("send_email", i, EMAIL, None) for i in ids]
    return FunctionCallsStartedFrame(function_calls=calls)


def in_progress(tool_call_id: str) -> FunctionCallInProgressFrame:
    return FunctionCallInProgressFrame(
        function_name="send_email",
        tool_call_id=tool_call_id,
        arguments=EMAIL,
        cancel_on_interruption=True,
    )


def cancel(tool_call_id: str) -> FunctionCallCancelFrame:
    return FunctionCallCancelFrame(function_name="send_email", tool_call_id=tool_call_id)


def result(tool_call_id: str) -> FunctionCallResultFrame:
    return FunctionCallResultFrame(
        function_name="send_email", tool_call_id=tool_call_id, arguments=EMAIL, result={"ok": 1}
    )


async def settle(
    frames: list[Frame],
) -> tuple[LLMAssistantAggregator, dict[str, Any], Sequence[Frame]]:
    """Run ``frames`` into the aggregator behind ``CutOffCalls``.

    Returns the aggregator, each call's result in the context by id, and the
    frames the aggregator sent upstream (an ``LLMContextFrame`` there runs the LLM).
    """
    context = LLMContext()
    assistant = LLMContextAggregatorPair(context).assistant()
    _, up = await run_test(Pipeline([CutOffCalls(), assistant]), frames_to_send=frames)
    messages: list[Any] = context.get_messages()
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    outcomes = {
        m["tool_call_id"]: json.loads(m["content"]) for m in messages if m.get("role") == "tool"
    }
    assert sorted(calls) == sorted(outcomes), "every call in the context has a result"
    return assistant, outcomes, up


def runs(up: Sequence[Frame]) -> int:
    return sum(isinstance(f, LLMContextFrame) for f in up)


async def test_a_cancel_that_overtook_the_calls_start_settles_it_once_it_has_started() -> None:
    assistant, outcomes, up = await settle([started("a"), cancel("a"), in_progress("a")])

    assert not assistant.has_function_calls_in_progress
    assert outcomes == {"a": "CANCELLED"}
    assert runs(up) == 0


async def test_a_cancel_right_behind_the_calls_start_is_settled_after_it() -> None:
    # The cancel, a system frame, would overtake the start in the aggregator's own queue.
    assistant, outcomes, up = await settle([started("a"), in_progress("a"), cancel("a")])

    assert not assistant.has_function_calls_in_progress
    assert outcomes == {"a": "CANCELLED"}
    assert runs(up) == 0


async def test_a_call_cancelled_before_it_started_is_settled_when_the_next_call_starts() -> None:
    frames = [started("a"), cancel("a"), started("b"), in_progress("b"), result("b")]

    assistant, outcomes, _ = await settle(frames)

    assert not assistant.has_function_calls_in_progress
    assert outcomes == {"a": "CANCELLED", "b": {"ok": 1}}


async def test_a_call_cancelled_by_its_own_timeout_still_runs_the_llm() -> None:
    timed_out = cancel("a")
    timed_out.run_llm = True

    assistant, outcomes, up = await settle([started("a"), in_progress("a"), timed_out])

    assert not assistant.has_function_calls_in_progress
    assert outcomes == {"a": "CANCELLED"}
    assert runs(up) == 1
