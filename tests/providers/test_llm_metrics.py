"""The OpenAI-compatible LLMs report their time to first byte, and no other metric.

The runner reads only a provider's time to first byte from pipecat's
``MetricsFrame``s (``teamrunner.call.observer``). The LLM runs under
pipecat's ``run_test`` with metrics on, against the OpenAI simulator, for a
spoken answer and for a function call; the metrics it pushes are what the
observer would see.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pipecat.frames.frames import LLMContextFrame, LLMFullResponseStartFrame, MetricsFrame
from pipecat.metrics.metrics import TTFBMetricsData
from pipecat.pipeline.worker import PipelineParams
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.tests.utils import SleepFrame, run_test

from simulators.openai import OpenAISimulator, Reply
from teamrunner.providers.openai_compatible import PooledOpenAILLMService
from teamrunner.providers.resources import OpenAIClients


@pytest.fixture
async def sim() -> AsyncIterator[OpenAISimulator]:
    async with OpenAISimulator() as simulator:
        yield simulator


@pytest.mark.parametrize(
    "reply", [Reply.say("Hello there."), Reply.call("transfer_to_billing")], ids=["says", "calls"]
)
async def test_the_llm_reports_its_time_to_first_byte_and_nothing_else(
    sim: OpenAISimulator, reply: Reply
) -> None:
    sim.push(reply)
    llm = PooledOpenAILLMService(
        clients=OpenAIClients(),
        api_key="sk-metrics",
        base_url=sim.base_url,
        settings=PooledOpenAILLMService.Settings(model="gpt-4o"),
    )
    context = LLMContext(messages=[{"role": "user", "content": "Hi."}])
    down, _ = await run_test(
        llm,
        frames_to_send=[LLMContextFrame(context), SleepFrame(sleep=0.5)],
        pipeline_params=PipelineParams(enable_metrics=True),
    )
    assert len(sim.requests) == 1
    # The response's metrics, not the zeros the worker announces as it starts.
    response = down[
        next(i for i, f in enumerate(down) if isinstance(f, LLMFullResponseStartFrame)) :
    ]
    metrics = [m for f in response if isinstance(f, MetricsFrame) for m in f.data]
    assert metrics and all(isinstance(m, TTFBMetricsData) for m in metrics), metrics
