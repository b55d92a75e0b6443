"""The LLM router holds its runs across a switch until the next member is ready, then runs once.

The router runs under pipecat's ``run_test`` over two real
``OpenAILLMService``s, one per member, talking to the OpenAI simulator; a run
is a request the simulator received. Cues in front of the router do what
``team_flow`` does around a transition: hold the runs and switch, write a
caller's turn into the conversation (as pipecat's user aggregator does before
it asks for a run), and queue the marker the next member's node sends once
its prompt and tools are on their way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pipecat.frames.frames import (
    DataFrame,
    Frame,
    LLMContextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.tests.utils import SleepFrame, run_test

from routing import RoutingLLMService
from simulators.openai import OpenAISimulator


@dataclass
class Transfer(DataFrame):
    """Cue: hold the runs and switch to ``member_id``, as a transition does."""

    member_id: str = ""


@dataclass
class Said(DataFrame):
    """Cue: the caller's turn ``text`` is written into ``context``."""

    context: LLMContext = field(default_factory=LLMContext)
    text: str = ""


@dataclass
class Ready(DataFrame):
    """Cue: queue the marker that ends the hold, as the next member's node does."""


class Cues(FrameProcessor):
    """In front of the router: acts on the cues, passes everything else."""

    def __init__(self, router: RoutingLLMService) -> None:
        super().__init__()
        self._router = router

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, Transfer):
            self._router.hold_until_ready()
            await self._router.set_active_member(frame.member_id)
        elif isinstance(frame, Said):
            frame.context.add_message({"role": "user", "content": frame.text})
        elif isinstance(frame, Ready):
            await self._router.member_ready()
        else:
            await self.push_frame(frame, direction)


def settle() -> SleepFrame:
    """Long enough for a queued marker, or a run, to have gone by."""
    return SleepFrame(sleep=0.3)


@pytest.fixture
async def sim() -> AsyncIterator[OpenAISimulator]:
    async with OpenAISimulator() as simulator:
        yield simulator


def router(sim: OpenAISimulator, **options: Any) -> RoutingLLMService:
    def llm(model: str) -> OpenAILLMService:
        settings = OpenAILLMService.Settings(model=model)
        return OpenAILLMService(api_key="sk-sim", base_url=sim.base_url, settings=settings)

    return RoutingLLMService({"a": llm("model-a"), "b": llm("model-b")}, "a", **options)


async def run(router: RoutingLLMService, frames: list[Frame]) -> None:
    await run_test(Pipeline([Cues(router), router]), frames_to_send=[*frames, settle()])


def asked(sim: OpenAISimulator) -> list[tuple[str, str | None]]:
    """Each run: the model asked, and the last thing the caller said in it."""
    return [(r.model, r.user_text) for r in sim.requests]


async def test_without_a_hold_every_run_goes_ahead(sim: OpenAISimulator) -> None:
    context = LLMContext()

    await run(
        router(sim),
        [Said(context, "Hi."), LLMContextFrame(context), settle(), LLMContextFrame(context)],
    )

    assert asked(sim) == [("model-a", "Hi."), ("model-a", "Hi.")]


async def test_the_runs_asked_for_during_a_hold_are_one_run_once_the_member_is_ready(
    sim: OpenAISimulator,
) -> None:
    context = LLMContext()

    await run(
        router(sim),
        [
            Said(context, "Billing, please."),
            Transfer("b"),
            LLMContextFrame(context),  # the run the transition's result asked for
            Said(context, "It is about invoice 42."),
            LLMContextFrame(context),  # the caller's turn, said meanwhile
            settle(),
            Ready(),
        ],
    )

    assert asked(sim) == [("model-b", "It is about invoice 42.")]


async def test_a_hold_ends_without_a_run_while_the_caller_is_speaking(
    sim: OpenAISimulator,
) -> None:
    context = LLMContext()

    await run(
        router(sim),
        [
            Said(context, "Billing, please."),
            Transfer("b"),
            LLMContextFrame(context),
            UserStartedSpeakingFrame(),
            settle(),
            Ready(),
            settle(),
            UserStoppedSpeakingFrame(),
            Said(context, "Wait."),
            LLMContextFrame(context),
        ],
    )

    assert asked(sim) == [("model-b", "Wait.")]


async def test_a_run_on_the_conversation_a_release_just_answered_is_not_made_again(
    sim: OpenAISimulator,
) -> None:
    context = LLMContext()

    await run(
        router(sim),
        [
            Said(context, "Billing, please."),
            Transfer("b"),
            LLMContextFrame(context),
            Ready(),
            settle(),
            LLMContextFrame(context),  # a turn written before the release, run after it
            settle(),
            Said(context, "Thanks."),
            LLMContextFrame(context),
        ],
    )

    assert asked(sim) == [("model-b", "Billing, please."), ("model-b", "Thanks.")]


async def test_a_member_that_never_becomes_ready_gets_its_run_after_the_timeout(
    sim: OpenAISimulator,
) -> None:
    context = LLMContext()

    await run(
        router(sim, ready_timeout_secs=0.3),
        [Said(context, "Hello?"), Transfer("b"), LLMContextFrame(context), SleepFrame(sleep=0.8)],
    )

    assert asked(sim) == [("model-b", "Hello?")]
