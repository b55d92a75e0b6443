"""What an operator sees of a team call: its metrics at /metrics, and its trace.

A real team call runs against the simulators (a greeting, a handoff to
billing, a tool call), then the test scrapes ``/metrics`` and reads the spans
an in-memory OpenTelemetry exporter received.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from playground.server import RunnerServer
from simulators.manager import Caller, ToolResult
from simulators.openai import Reply

from conftest import Cloud, cloud_settings
from scenarios import BILLING, GREETER, TEAM_CALL_ID, caller_says, team_request

SPANS = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def tracer_provider() -> None:
    """The process's tracer provider, exporting to memory (OpenTelemetry allows one per process)."""
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        current = provider
    current.add_span_processor(SimpleSpanProcessor(SPANS))


@pytest.fixture
async def traced_runner(cloud: Cloud) -> AsyncIterator[RunnerServer]:
    async with RunnerServer(cloud_settings(cloud, tracing=True)) as server:
        yield server


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def team_call_with_a_handoff_and_a_tool(cloud: Cloud, url: str, http: httpx.AsyncClient):
    cloud.openai.push(Reply.say("Welcome to Acme."), Reply.call("transfer_to_billing"))
    # get_invoice has run_llm off: billing says its line, Go runs the tool, and that is all.
    cloud.grok.push(
        Reply.say("Billing here, let me look.").and_call("get_invoice", {"number": "42"})
    )
    call = cloud.manager.expect_call(
        TEAM_CALL_ID,
        caller=Caller(Caller.silence(0.3)),
        tools={"get_invoice": ToolResult.ok({"status": "paid"})},
    )
    response = await http.post(f"{url}/run", json=team_request())
    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, "I have a billing question.")
    await call.wait_member_switches(1, timeout=15)
    await call.wait_tool_calls(1, timeout=15)
    await call.wait(lambda c: "Billing here, let me look." in c.bot_llm_text(), 15, "billing")
    await call.wait_bot_audio(min_secs=0.3, timeout=10)  # both members have spoken
    return call


async def test_metrics_after_a_team_call_count_its_start_handoff_tool_waits_and_end(
    cloud: Cloud, traced_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    url = traced_runner.url
    await team_call_with_a_handoff_and_a_tool(cloud, url, http)
    during = samples((await http.get(f"{url}/metrics")).text)
    assert (await http.post(f"{url}/stop", params={"id": TEAM_CALL_ID})).status_code == 200
    after = samples((await http.get(f"{url}/metrics")).text)

    assert during[("runner_calls_active", ())] == 1
    assert after[("runner_calls_active", ())] == 0
    assert after[("runner_calls_started_total", (("kind", "team"),))] == 1
    assert after[("runner_calls_ended_total", (("reason", "stopped"),))] == 1
    handoff = (("from_member", GREETER), ("team", "team-1"), ("to_member", BILLING))
    assert after[("runner_handoffs_total", handoff)] == 1
    assert after[("runner_handoff_seconds_count", ())] == 1
    assert 0 < after[("runner_handoff_seconds_sum", ())] < 5
    assert after[("runner_tool_calls_total", (("outcome", "ok"),))] == 1
    assert after[("runner_tool_seconds_count", ())] == 1
    assert after[("runner_user_to_bot_seconds_count", ())] >= 1
    for provider in ("openai", "grok"):
        ttfb = ("runner_provider_ttfb_seconds_count", (("kind", "LLM"), ("provider", provider)))
        assert after[ttfb] >= 1, provider
    tts_ttfb = ("runner_provider_ttfb_seconds_count", (("kind", "TTS"), ("provider", "cartesia")))
    assert after[tts_ttfb] >= 1
    assert not any(name == "runner_provider_errors_total" for name, _ in after)


async def test_a_traced_team_call_has_a_handoff_span_in_its_conversation(
    cloud: Cloud, traced_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    SPANS.clear()
    await team_call_with_a_handoff_and_a_tool(cloud, traced_runner.url, http)
    await http.post(f"{traced_runner.url}/stop", params={"id": TEAM_CALL_ID})

    spans = SPANS.get_finished_spans()
    [handoff] = [s for s in spans if s.name == "handoff"]
    assert dict(handoff.attributes or {}) == {
        "conversation.id": TEAM_CALL_ID,
        "handoff.function": "transfer_to_billing",
        "handoff.from_member": GREETER,
        "handoff.to_member": BILLING,
    }
    [conversation] = [s for s in spans if s.name == "conversation"]
    assert (conversation.attributes or {})["conversation.id"] == TEAM_CALL_ID
    # pipecat traced the call's turns and its LLM requests inside the same conversation.
    assert any(s.name == "turn" for s in spans)
    assert any(s.name == "llm" for s in spans)
