"""A response that hands the call over passes the voice; its line reaches the next member.

The voice router is run with pipecat's ``run_test`` over two recording
services: the calls of a response of transitions alone come out of the router
without reaching the voice, and ``PartingWords`` gives the line said with them
to the next member's first request. A response with a Go tool among its
calls, and a transfer that was refused, keep pipecat's order, behind the
voice.
"""

from __future__ import annotations

from typing import Any

from pipecat.frames.frames import (
    Frame,
    FunctionCallFromLLM,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallResultProperties,
    FunctionCallsStartedFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    ManuallySwitchServiceFrame,
    TTSAudioRawFrame,
)
from pipecat.processors.aggregators.llm_context import LLMContext

from routing import RoutingTTSService
from routing.parting_words import PartingWords
from teamrunner.providers.espeak import EspeakTTSService

from routing_doubles import Member, run_router

LINE = "Sure, one moment."


async def _enter_next_node() -> None:
    """What pipecat.flows runs once a transition's result is in the context."""


def reply_with_calls(*names: str, moves_on: bool = True) -> list[Frame]:
    """A reply saying ``LINE`` and calling ``names``, each call started and finished."""
    calls = [
        FunctionCallFromLLM(
            function_name=name, tool_call_id=f"id-{name}", arguments={}, context=None
        )
        for name in names
    ]
    properties = (
        FunctionCallResultProperties(run_llm=False, on_context_updated=_enter_next_node)
        if moves_on
        else None
    )
    frames: list[Frame] = [
        LLMFullResponseStartFrame(),
        LLMTextFrame(LINE),
        LLMFullResponseEndFrame(),
        FunctionCallsStartedFrame(function_calls=calls),
    ]
    for call in calls:
        frames.append(
            FunctionCallInProgressFrame(
                function_name=call.function_name, tool_call_id=call.tool_call_id, arguments={}
            )
        )
    for call in calls:
        frames.append(
            FunctionCallResultFrame(
                function_name=call.function_name,
                tool_call_id=call.tool_call_id,
                arguments={},
                result={"status": "transferred"},
                run_llm=None,
                properties=properties,
            )
        )
    return frames


def voice_team() -> tuple[RoutingTTSService, Member, PartingWords]:
    a, b = Member("voice-a"), Member("voice-b")
    parting = PartingWords()
    router = RoutingTTSService(
        {"a": a, "b": b},  # type: ignore[dict-item]
        "a",
        transitions={"to_b"},
        parting=parting,
    )
    return router, a, parting


def call_frames(frames: list[Frame]) -> list[type[Frame]]:
    kinds = (FunctionCallInProgressFrame, FunctionCallResultFrame)
    return [type(f) for f in frames if isinstance(f, kinds)]


def conversation_after(*tool_call_ids: str) -> LLMContextFrame:
    """The context as the aggregator holds it once the response's results are in."""
    messages: list[Any] = [{"role": "user", "content": "Billing, please."}]
    for tool_call_id in tool_call_ids:
        name = tool_call_id.removeprefix("id-")
        call = {
            "id": tool_call_id,
            "type": "function",
            "function": {"name": name, "arguments": "{}"},
        }
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": tool_call_id, "content": "{}"})
    return LLMContextFrame(context=LLMContext(messages=messages))


async def test_a_transitions_calls_pass_the_voice_and_its_line_is_kept_for_the_next_member() -> (
    None
):
    router, voice, parting = voice_team()

    run = await run_router(router, reply_with_calls("to_b"))

    # The voice was given the reply, and none of its calls.
    assert [f.text for f in voice.frames if isinstance(f, LLMTextFrame)] == [LINE]
    assert call_frames(voice.frames) == []
    assert call_frames(list(run.down)) == [FunctionCallInProgressFrame, FunctionCallResultFrame]
    first = parting.completed(conversation_after("id-to_b"))
    said, call, result = first.context.get_messages()[1:]
    assert said == {"role": "assistant", "content": LINE}
    assert call["tool_calls"][0]["id"] == result["tool_call_id"] == "id-to_b"
    # Once: the next request reads the conversation as the aggregator writes it.
    again = conversation_after("id-to_b")
    assert parting.completed(again) is again


async def test_the_go_tools_called_with_a_transition_pass_the_voice_with_it() -> None:
    router, voice, parting = voice_team()

    run = await run_router(router, reply_with_calls("send_email", "to_b"))

    assert call_frames(voice.frames) == []
    assert (
        call_frames(list(run.down))
        == [FunctionCallInProgressFrame] * 2 + [FunctionCallResultFrame] * 2
    )
    # pipecat writes each call as a message of its own: the line goes before the first.
    first = parting.completed(conversation_after("id-send_email", "id-to_b"))
    said, email_call = first.context.get_messages()[1:3]
    assert said == {"role": "assistant", "content": LINE}
    assert email_call["tool_calls"][0]["id"] == "id-send_email"


async def test_a_response_without_a_transition_keeps_its_calls_behind_the_voice() -> None:
    router, voice, parting = voice_team()

    run = await run_router(router, reply_with_calls("send_email"))

    assert call_frames(voice.frames) == [FunctionCallInProgressFrame, FunctionCallResultFrame]
    assert call_frames(list(run.down)) == call_frames(voice.frames)
    frame = conversation_after("id-send_email")
    assert parting.completed(frame) is frame


async def test_a_refused_transfer_keeps_its_result_behind_the_voice() -> None:
    router, voice, _ = voice_team()

    run = await run_router(router, reply_with_calls("send_email", "to_b", moves_on=False))

    # The starts and the Go tool's result passed; the transfer's error result did not.
    assert [
        (type(f), f.function_name) for f in voice.frames if isinstance(f, FunctionCallResultFrame)
    ] == [(FunctionCallResultFrame, "to_b")]
    assert (
        call_frames(list(run.down))
        == [FunctionCallInProgressFrame] * 2 + [FunctionCallResultFrame] * 2
    )


def test_a_line_the_conversation_already_holds_is_not_given_twice() -> None:
    parting = PartingWords()
    parting.passed({"id-to_b"}, LINE)
    frame = conversation_after("id-to_b")
    messages = frame.context.get_messages()
    frame.context.set_messages([messages[0], {"role": "assistant", "content": LINE}, *messages[1:]])

    assert parting.completed(frame) is frame


def test_a_run_on_a_conversation_that_does_not_end_with_the_transition_is_left_alone() -> None:
    parting = PartingWords()
    parting.passed({"id-to_b"}, LINE)
    frame = conversation_after("id-to_b")
    frame.context.add_message({"role": "user", "content": "Hello?"})

    assert parting.completed(frame) is frame
    parting.forget()
    assert (
        parting.completed(conversation_after("id-to_b")).context.get_messages()[-1]["role"]
        == "tool"
    )


async def test_a_switch_that_comes_before_the_transitions_result_waits_for_it_to_pass() -> None:
    a = EspeakTTSService(settings=EspeakTTSService.Settings(voice="en-us"))
    b = EspeakTTSService(settings=EspeakTTSService.Settings(voice="en-gb"))
    router = RoutingTTSService({"a": a, "b": b}, "a", transitions={"to_b"})
    frames = reply_with_calls("to_b")
    result = frames.pop()
    frames += [
        ManuallySwitchServiceFrame(service=b),
        result,
        LLMFullResponseStartFrame(),
        LLMTextFrame("Billing here."),
        LLMFullResponseEndFrame(),
    ]

    run = await run_router(router, frames)

    down = list(run.down)
    audio = [i for i, f in enumerate(down) if isinstance(f, TTSAudioRawFrame)]
    line = [i for i in audio if down[i].context_id == down[audio[0]].context_id]
    answer = [i for i in audio if i not in line]
    passed = next(i for i, f in enumerate(down) if isinstance(f, FunctionCallResultFrame))
    # The result did not wait behind the line...
    assert passed < line[-1]
    # ...and the next voice did, whole.
    assert answer and line[-1] < answer[0]
    assert router.strategy.active_service is b
