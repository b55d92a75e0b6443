"""A remote policy drives live calls: single AI and team, voice and text, over real sockets.

A real runner runs each call between the simulated cloud and a policy
service on 127.0.0.1: the fault-injecting ``PolicySimulator``, which records
every request's path, body and Authorization header, or the example
receptionist service (``examples/receptionist_policy.py``) as a process of
its own. Each test reads what the policy service, the LLM servers, the
voices and pipecat-manager received.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from loguru import logger

from playground.policy_service import ExamplePolicy
from playground.server import RunnerServer
from simulators.manager import Caller
from simulators.openai import ChatRequest, Reply
from simulators.policy import PolicyAnswer, PolicySimulator

from conftest import Cloud
from scenarios import (
    BILLING,
    CALL_ID,
    GREETER,
    TEAM_CALL_ID,
    caller_says,
    closed_at,
    played_until,
    team_request,
)
from scenarios import voice_request as _voice_request

TOKEN = "policy-bearer-7f3c9e1d5b"
OWN_PROMPT = "You are Ava, a helpful assistant."


def tool(name: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The policy's {name}.",
        "params": {"type": "object", "properties": properties, "required": list(properties)},
    }


LOOKUP = tool("lookup", id={"type": "integer"})
CONFIRM = tool("confirm", ok={"type": "boolean"})
START = {
    "system_prompt": "Find out what the caller needs.",
    "tools": [LOOKUP],
    "node_id": "start",
    "collected_vars": {"seen": 1},
}


def remote_policy(policy: PolicySimulator, **changes: object) -> dict[str, Any]:
    return {"url": policy.url, "config": {"graph": "demo"}, "token": TOKEN, **changes}


def voice_request(policy: PolicySimulator, **changes: object) -> dict[str, Any]:
    return _voice_request(remote_policy=remote_policy(policy), **changes)


def result_of(request: ChatRequest) -> Any:
    """The tool result a model request ends with."""
    last = request.messages[-1]
    assert last["role"] == "tool", last
    return json.loads(last["content"])


@pytest.fixture
async def policy() -> AsyncIterator[PolicySimulator]:
    async with PolicySimulator(session=dict(START)) as sim:
        yield sim


@pytest.fixture
def logs() -> Iterator[list[Any]]:
    """Every log record, pipecat's own included, from DEBUG up."""
    records: list[Any] = []
    sink = logger.add(lambda message: records.append(message.record), level="DEBUG")
    yield records
    logger.remove(sink)


def summary_of(logs: list[Any]) -> dict[str, Any]:
    [summary] = [r["extra"]["summary"] for r in logs if "summary" in r["extra"]]
    return summary


async def test_the_session_gets_the_contracts_body_and_seeds_the_first_model_request(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, policy: PolicySimulator
) -> None:
    cloud.openai.push(Reply.say("Hello."), Reply.call("send_email", {"to": "a@b.c"}))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))

    response = await http.post(f"{runner.url}/run", json=voice_request(policy))

    assert response.status_code == 200, response.text
    [session] = policy.requests
    assert session.path == "/session"
    assert session.body == {"brain_config": {"graph": "demo"}, "provider": "openai"}
    [first] = await cloud.openai.wait_for_requests(1, timeout=10)
    # The request's own system prompt first, then the policy's.
    assert first.system_prompt == f"{OWN_PROMPT}\n\nFind out what the caller needs."
    # The policy's tool beside the request's Go tool.
    assert sorted(first.tool_names) == ["lookup", "send_email"]
    [lookup] = [t["function"] for t in first.tools if t["function"]["name"] == "lookup"]
    assert lookup["description"] == "The policy's lookup."
    assert lookup["parameters"]["properties"] == {"id": {"type": "integer"}}
    assert lookup["parameters"]["required"] == ["id"]

    # A Go tool still goes to Go, and the policy hears nothing of it.
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, "Email me, please.", call_id=CALL_ID)
    [email] = await call.wait_tool_calls(name="send_email", timeout=10)
    assert email.arguments == {"to": "a@b.c"}
    assert [r.path for r in policy.requests] == ["/session"]


async def test_a_transition_reseeds_the_model_speaks_its_say_and_carries_the_state_on(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, policy: PolicySimulator
) -> None:
    policy.push(
        PolicyAnswer.ok(
            {
                "action": "transition",
                "system_prompt": "Confirm the day.",
                "tools": [CONFIRM],
                "say": "Sure, Tuesday it is.",
                "node_id": "confirm",
                "collected_vars": {"seen": 1, "day": "Tuesday"},
                "finished": False,
            }
        ),
        PolicyAnswer.ok(
            {
                "action": "stay",
                "node_id": "confirm",
                "collected_vars": {"seen": 1, "day": "Tuesday", "ok": True},
                "finished": False,
            }
        ),
    )
    cloud.openai.push(
        Reply.say("Hello."),
        Reply.call("lookup", {"id": 7}),
        Reply.say("Shall I confirm?"),
        Reply.call("confirm", {"ok": True}),
        Reply.say("Confirmed."),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    assert (await http.post(f"{runner.url}/run", json=voice_request(policy))).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    await caller_says(cloud, "Tuesday, please.", call_id=CALL_ID)

    requests = await cloud.openai.wait_for_requests(3, timeout=15)
    assert policy.requests[1].path == "/tool-call"
    assert policy.requests[1].body == {
        "node_id": "start",
        "tool": {"name": "lookup", "args": {"id": 7}},
        "collected_vars": {"seen": 1},
    }
    # The model answers under the new state: the new prompt, the new policy tools, Go's kept.
    after = requests[2]
    assert after.system_prompt == f"{OWN_PROMPT}\n\nConfirm the day."
    assert sorted(after.tool_names) == ["confirm", "send_email"]
    said = "Sure, Tuesday it is."
    assert result_of(after) == {"status": "ok", "action": "transition", "said": said}
    # The say was spoken in the call's voice, before the model's answer.
    await call.wait(lambda c: "Shall I confirm?" in c.bot_transcripts(), 10, "the answer")
    assert "Sure, Tuesday it is." in cloud.cartesia.texts_for_voice("voice-a")
    spoken = call.bot_transcripts()
    assert spoken.index("Sure, Tuesday it is.") < spoken.index("Shall I confirm?")

    await caller_says(cloud, "Yes.", call_id=CALL_ID)

    requests = await cloud.openai.wait_for_requests(5, timeout=15)
    # The collected_vars of the transition went with the next call, at its node.
    assert policy.requests[2].body == {
        "node_id": "confirm",
        "tool": {"name": "confirm", "args": {"ok": True}},
        "collected_vars": {"seen": 1, "day": "Tuesday"},
    }
    # A stay changes nothing: the model gets the result under the same prompt and tools.
    stayed = requests[4]
    assert result_of(stayed) == {"status": "ok", "action": "stay"}
    assert stayed.system_prompt == after.system_prompt
    assert sorted(stayed.tool_names) == ["confirm", "send_email"]
    assert call.tool_calls == []  # no policy tool reached Go
    assert {r.authorization for r in policy.requests} == {f"Bearer {TOKEN}"}


async def test_a_team_transition_to_a_member_id_hands_the_call_to_that_member(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, policy: PolicySimulator
) -> None:
    policy.session = PolicyAnswer.ok(
        {
            "system_prompt": "Route the caller.",
            "tools": [tool("route", to={"type": "string"})],
            "node_id": "routing",
            "collected_vars": {},
        }
    )
    policy.push(
        PolicyAnswer.ok(
            {
                "action": "transition",
                "system_prompt": "Help with the bill.",
                "tools": [tool("pay")],
                "say": "Putting you through to billing.",
                "node_id": BILLING,
                "collected_vars": {"routed": True},
            }
        ),
        PolicyAnswer.ok(
            {
                "action": "transition",
                "system_prompt": "Take the payment.",
                "tools": [],
                "node_id": "paying",
                "collected_vars": {"routed": True},
            }
        ),
    )
    cloud.openai.push(Reply.say("Welcome."), Reply.call("route", {"to": "billing"}))
    cloud.grok.push(Reply.say("Billing here."), Reply.call("pay"), Reply.say("Your card, please."))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = {**team_request(), "remote_policy": remote_policy(policy)}

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    assert policy.requests[0].body == {"brain_config": {"graph": "demo"}, "provider": "openai"}
    [greeter] = await cloud.openai.wait_for_requests(1, timeout=10)
    assert greeter.system_prompt == "You greet callers for Acme.\n\nRoute the caller."
    assert sorted(greeter.tool_names) == [
        "route",
        "send_email",
        "transfer_to_billing",
        "transfer_to_support",
    ]
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    await caller_says(cloud, "Billing, please.")

    [switch] = await call.wait_member_switches(1, timeout=15)
    assert switch.transition_function_name == "route"
    assert (switch.from_member["id"], switch.to_member["id"]) == (GREETER, BILLING)
    [billing] = await cloud.grok.wait_for_requests(1, timeout=10)
    assert billing.system_prompt == "You handle billing for Acme.\n\nHelp with the bill."
    assert sorted(billing.tool_names) == ["get_invoice", "pay", "transfer_to_greeter"]
    assert billing.model == "grok-3"
    await call.wait(lambda c: "Billing here." in c.bot_transcripts(), 15, "billing's answer")
    # The say in the greeter's voice, then billing in its own.
    await cloud.elevenlabs.wait_until(lambda: cloud.elevenlabs.texts_for_voice("voice-billing"))
    assert cloud.cartesia.texts_for_voice("voice-greeter")[-1] == "Putting you through to billing."
    assert cloud.elevenlabs.texts_for_voice("voice-billing") == ["Billing here."]
    assert len(cloud.openai.requests) == 2

    # A transition to a node that is no member's id changes the prompt, not the member.
    await caller_says(cloud, "I want to pay.")
    requests = await cloud.grok.wait_for_requests(3, timeout=15)
    assert policy.requests[2].body["node_id"] == BILLING
    assert requests[2].system_prompt == "You handle billing for Acme.\n\nTake the payment."
    assert sorted(requests[2].tool_names) == ["get_invoice", "transfer_to_greeter"]
    await cloud.elevenlabs.wait_until(
        lambda: "Your card, please." in cloud.elevenlabs.texts_for_voice("voice-billing")
    )
    assert len(call.member_switches) == 1


async def test_end_speaks_its_goodbye_and_closes_the_call_once_heard_keeping_the_disposition(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, logs: list[Any]
) -> None:
    """The whole receptionist flow, against the example service run as its README says."""
    cloud.openai.push(
        Reply.say("Hello, which day would suit you?"),
        Reply.call("book_appointment", {"day": "Tuesday"}),
        Reply.say(""),
        Reply.call("confirm_booking", {"confirmed": True}),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    async with ExamplePolicy() as service:
        policy = {"url": service.url, "token": service.token, "config": {"business": "Acme Dental"}}
        response = await http.post(f"{runner.url}/run", json=_voice_request(remote_policy=policy))
        assert response.status_code == 200, response.text
        session = runner.sessions.get(CALL_ID)
        assert session is not None
        [first] = await cloud.openai.wait_for_requests(1, timeout=10)
        assert "friendly receptionist of Acme Dental" in first.system_prompt
        assert sorted(first.tool_names) == ["book_appointment", "opening_hours", "send_email"]
        await call.wait_rtvi("bot-llm-stopped", timeout=10)

        await caller_says(cloud, "Tuesday would be great.", call_id=CALL_ID)
        requests = await cloud.openai.wait_for_requests(3, timeout=15)
        assert "The caller asked for Tuesday" in requests[2].system_prompt
        assert sorted(requests[2].tool_names) == ["confirm_booking", "send_email"]
        await call.wait(
            lambda c: "Sure, booking you for Tuesday. Shall I confirm?" in c.bot_transcripts(),
            10,
            "the transition's say",
        )
        await caller_says(cloud, "Yes, please.", call_id=CALL_ID)

        await call.wait_closed(timeout=15)
        await asyncio.wait_for(session.finished.wait(), 10)
    goodbye = "You are booked for Tuesday. Goodbye!"
    assert cloud.cartesia.texts_for_voice("voice-a")[-1] == goodbye
    assert call.bot_transcripts()[-1] == goodbye
    assert closed_at(call) >= played_until(call, cloud, "voice-a")
    assert len(cloud.openai.requests) == 4  # the model was asked nothing after end
    # The example service took every request: each carried its token.
    assert [line.split(" -> ")[0] for line in service.requests] == [
        "policy: POST /session",
        "policy: POST /tool-call",
        "policy: POST /tool-call",
    ]
    assert all(line.endswith("-> 200") for line in service.requests)
    # The summary line keeps how the policy ended the call.
    summary = summary_of(logs)
    assert summary["end_reason"] == "policy_ended"
    assert summary["disposition"] == "booked"
    assert summary["policy_decisions"] == {"transition": 1, "end": 1}
    [line] = [r["message"] for r in logs if "summary" in r["extra"]]
    assert "disposition=booked" in line
    metrics = (await http.get(f"{runner.url}/metrics")).text.splitlines()
    assert 'runner_calls_ended_total{reason="policy_ended"} 1.0' in metrics


FAULTS = {
    "500": PolicyAnswer.fail(500),
    "timeout": PolicyAnswer.hang(3),
    "garbage": PolicyAnswer.garbage(),
    "transition-without-prompt": PolicyAnswer.ok(
        {"action": "transition", "say": "Moving on.", "node_id": "elsewhere"}
    ),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
async def test_a_failing_policy_leaves_the_state_unchanged_and_the_call_going(
    cloud: Cloud,
    runner: RunnerServer,
    http: httpx.AsyncClient,
    policy: PolicySimulator,
    logs: list[Any],
    fault: PolicyAnswer,
) -> None:
    policy.push(fault)
    cloud.openai.push(
        Reply.say("Hello."),
        Reply.call("lookup", {"id": 1}),
        Reply.say("Sorry, I could not look that up."),
        Reply.call("lookup", {"id": 2}),
        Reply.say("Found it."),
    )
    call = cloud.manager.expect_call(CALL_ID)
    # A text session: no voice, the bot's words are text.
    body = voice_request(policy, tts_type=None, tts_voice_id=None)
    body["remote_policy"]["timeout_secs"] = 0.5
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait(lambda c: c.bot_llm_text(), 10, "the hello")

    await cloud.manager.send_text(CALL_ID, "Look up one.")

    requests = await cloud.openai.wait_for_requests(3, timeout=15)
    failed = result_of(requests[2])
    assert failed["status"] == "error" and "policy service failed" in failed["error"]
    # Nothing changed: the same prompt and tools, and nothing said for the policy.
    assert requests[2].system_prompt == requests[0].system_prompt
    assert sorted(requests[2].tool_names) == ["lookup", "send_email"]
    await call.wait(lambda c: len(c.bot_llm_text()) == 2, 10, "the answer to the error")
    assert call.bot_llm_text() == ["Hello.", "Sorry, I could not look that up."]
    assert any(
        r["level"].name == "WARNING" and "remote policy: /tool-call lookup failed" in r["message"]
        for r in logs
    )

    # The call goes on, and the next request is sent from the state before the fault.
    await cloud.manager.send_text(CALL_ID, "Look up two.")
    await call.wait(lambda c: "Found it." in c.bot_llm_text(), 15, "the next answer")
    assert policy.requests[2].body == {
        "node_id": "start",
        "tool": {"name": "lookup", "args": {"id": 2}},
        "collected_vars": {"seen": 1},
    }
    assert not call.closed


START_FAULTS = {
    "500": PolicyAnswer.fail(500),
    "garbage": PolicyAnswer.garbage(),
    "no-tools": PolicyAnswer.ok({"system_prompt": "Hi.", "node_id": "start"}),
    "a-tool-named-like-a-go-tool": PolicyAnswer.ok(
        {**START, "tools": [tool("send_email", to={"type": "string"})]}
    ),
}


@pytest.mark.parametrize("fault", START_FAULTS.values(), ids=START_FAULTS.keys())
async def test_a_session_that_fails_fails_the_start_naming_the_policy_and_leaves_nothing(
    cloud: Cloud,
    runner: RunnerServer,
    http: httpx.AsyncClient,
    policy: PolicySimulator,
    fault: PolicyAnswer,
) -> None:
    policy.session = fault

    response = await http.post(f"{runner.url}/run", json=voice_request(policy))

    assert response.status_code == 500
    answer = response.json()
    assert answer["status"] == "error"
    assert answer["error"].startswith("call could not start: remote policy: POST /session")
    assert [p["field"] for p in answer["problems"]] == ["remote policy"]
    assert TOKEN not in response.text and policy.url not in response.text
    # Nothing was left behind: no call, no socket to pipecat-manager, no model asked.
    assert (await http.get(f"{runner.url}/health")).json()["sessions"] == 0
    assert CALL_ID not in cloud.manager.calls or not cloud.manager.call(CALL_ID).connections()
    assert cloud.openai.requests == []
    # The failed call's secrets were released with it: the redactor holds its token no more.
    assert runner.app.state.runtime.redactor.redact(TOKEN) == TOKEN
    # The same id can be started again once the policy answers.
    policy.session = PolicyAnswer.ok(dict(START))
    cloud.manager.expect_call(CALL_ID)
    retried = await http.post(f"{runner.url}/run", json=voice_request(policy))
    assert retried.status_code == 200, retried.text


async def test_the_token_is_sent_on_every_request_and_written_nowhere(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, logs: list[Any]
) -> None:
    async with PolicySimulator(session=dict(START)) as policy:
        # A policy careless enough to say its own token: the runner scrubs it everywhere.
        policy.push(
            PolicyAnswer.fail(500),
            PolicyAnswer.ok(
                {
                    "action": "transition",
                    "system_prompt": f"Never read out {TOKEN}.",
                    "tools": [],
                    "say": f"My token is {TOKEN}.",
                    "node_id": BILLING,
                }
            ),
        )
        cloud.openai.push(
            Reply.say("Welcome."), Reply.call("lookup", {"id": 1}), Reply.call("lookup", {"id": 2})
        )
        cloud.grok.push(Reply.say("Billing here."))
        call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
        team = team_request()
        team["resolved_team"]["members"][0]["tools"] = []
        body = {**team, "remote_policy": remote_policy(policy)}
        assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
        await call.wait_rtvi("bot-llm-stopped", timeout=10)
        await caller_says(cloud, "Look it up.")
        [switch] = await call.wait_member_switches(1, timeout=15)
        await call.wait(lambda c: "Billing here." in c.bot_transcripts(), 15, "billing")
        calls = (await http.get(f"{runner.url}/calls")).text
        await http.post(f"{runner.url}/stop", params={"id": TEAM_CALL_ID})

        # A start that fails, with the token in the request.
        policy.session = PolicyAnswer.fail(401)
        refused = await http.post(f"{runner.url}/run", json=voice_request(policy))
        assert refused.status_code == 500

    assert len(policy.requests) == 4
    assert {r.authorization for r in policy.requests} == {f"Bearer {TOKEN}"}
    assert "[redacted]" in call.bot_transcripts()[-2]  # the policy's say, scrubbed
    written = [
        refused.text,
        calls,
        str(switch.raw_body),
        *(str(m.message) for m in call.rtvi()),
        *(str(r["message"]) for r in logs),
        *(str(r["extra"]) for r in logs),
    ]
    assert any("remote policy" in text for text in written)
    assert [text for text in written if TOKEN in text] == []
