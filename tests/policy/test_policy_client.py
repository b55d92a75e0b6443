"""The remote-policy client speaks the contract byte for byte, and fails safe.

The example receptionist service runs as a real process (``python3
examples/receptionist_policy.py``), the fault-injecting simulator as a real
local server; each test reads what the service received or what it decided.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from simulators.policy import PolicyAnswer, PolicySimulator
from teamrunner.errors import PolicyError
from teamrunner.policy.client import Action, PolicyClient

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "policy-token-do-not-leak-7c1e"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def receptionist() -> Iterator[str]:
    """The example service, as its README says to run it, with a token."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "examples/receptionist_policy.py", "--port", str(port), "--token", TOKEN],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            httpx.post(f"{url}/session", json={}, timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    yield url
    process.terminate()
    process.wait(5)


@pytest.fixture
async def policy() -> AsyncIterator[PolicySimulator]:
    async with PolicySimulator() as sim:
        yield sim


async def test_the_receptionist_flow_books_a_day_accumulating_its_variables(
    receptionist: str,
) -> None:
    client = PolicyClient(receptionist, {"business": "Acme Dental"}, "openai", token=TOKEN)
    try:
        start = await client.start()
        booked = await client.tool_call("book_appointment", {"day": "Tuesday"})
        done = await client.tool_call("confirm_booking", {"confirmed": True})
    finally:
        await client.close()

    assert start.node_id == "greeting"
    assert "Acme Dental" in start.system_prompt
    assert [t.name for t in start.tools] == ["book_appointment", "opening_hours"]
    assert start.tools[0].params["properties"] == {"day": {"type": "string"}}
    assert booked.action is Action.TRANSITION
    assert booked.state.node_id == "confirm"
    assert booked.say == "Sure, booking you for Tuesday. Shall I confirm?"
    assert booked.state.collected_vars["requested_day"] == "Tuesday"
    assert [t.name for t in booked.state.tools] == ["confirm_booking"]
    assert done.action is Action.END and done.disposition == "booked"
    assert done.state.finished is True
    assert done.state.collected_vars["booked_day"] == "Tuesday"


async def test_a_wrong_token_fails_the_start_without_naming_the_token(receptionist: str) -> None:
    client = PolicyClient(receptionist, {}, "openai", token="not-the-token-at-all")
    with pytest.raises(PolicyError) as refused:
        await client.start()
    await client.close()
    assert "HTTP 401" in str(refused.value)
    assert "not-the-token-at-all" not in str(refused.value)


async def test_requests_carry_exactly_the_contracts_bodies_and_the_bearer_token(
    policy: PolicySimulator,
) -> None:
    policy.session = PolicyAnswer.ok(
        {
            "system_prompt": "Greet.",
            "tools": [{"name": "lookup", "description": "Look up.", "params": {"type": "object"}}],
            "node_id": "n1",
            "collected_vars": {"seen": 1},
        }
    )
    client = PolicyClient(policy.url, {"graph": "demo"}, "grok", token=TOKEN)
    await client.start()
    await client.tool_call("lookup", {"id": 7})
    await client.close()

    session, call = policy.requests
    assert (session.path, session.body) == (
        "/session",
        {"brain_config": {"graph": "demo"}, "provider": "grok"},
    )
    assert call.path == "/tool-call"
    assert call.body == {
        "node_id": "n1",
        "tool": {"name": "lookup", "args": {"id": 7}},
        "collected_vars": {"seen": 1},
    }
    assert {r.authorization for r in policy.requests} == {f"Bearer {TOKEN}"}


async def test_without_a_token_no_authorization_is_sent(policy: PolicySimulator) -> None:
    client = PolicyClient(policy.url, {}, "openai")
    await client.start()
    await client.close()
    assert policy.requests[0].authorization is None


@pytest.mark.parametrize(
    "fault",
    [
        PolicyAnswer.fail(500),
        PolicyAnswer.fail(404),
        PolicyAnswer.garbage(),
        PolicyAnswer.hang(3),
        PolicyAnswer.ok({"action": "transition", "node_id": "elsewhere", "say": "Moving."}),
        PolicyAnswer.ok({"action": "dance", "node_id": "elsewhere"}),
        PolicyAnswer.ok(["not", "an", "object"]),
    ],
    ids=["500", "404", "garbage", "timeout", "transition-without-prompt", "unknown-action", "list"],
)
async def test_every_fault_is_a_stay_with_no_change_of_state(
    policy: PolicySimulator, fault: PolicyAnswer
) -> None:
    client = PolicyClient(policy.url, {}, "openai", timeout_secs=0.5)
    before = await client.start()
    policy.push(
        fault,
        PolicyAnswer.ok(
            {
                "action": "stay",
                "node_id": "start",
                "collected_vars": {"after": True},
                "finished": False,
            }
        ),
    )

    failed = await client.tool_call("anything", {})
    recovered = await client.tool_call("anything", {})
    await client.close()

    assert failed.action is Action.STAY
    assert failed.error is not None and failed.state == before
    assert failed.result()["status"] == "error"
    # The next call works again, and its state is taken.
    assert recovered.error is None
    assert recovered.state.collected_vars == {"after": True}


async def test_an_unreachable_policy_fails_the_start_naming_it(policy: PolicySimulator) -> None:
    client = PolicyClient("http://127.0.0.1:9", {}, "openai", timeout_secs=1)
    with pytest.raises(PolicyError, match=r"^remote policy: POST /session failed") as refused:
        await client.start()
    await client.close()
    assert refused.value.reason == "POST /session failed (could not connect)"
    assert "127.0.0.1:9" not in str(refused.value)  # a URL may carry a password


PROMPTED = {"system_prompt": "Go on.", "tools": [], "node_id": "next"}
TOOL = {"name": "lookup", "params": {"type": "object"}}
WITHOUT_PROMPT = "answered without the system_prompt and tools the contract requires"
WRONG_STATE = "answered a node_id or collected_vars of the wrong type"
NO_NAME = "answered a tool without a name"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"node_id": "n"}, "answered no action the contract knows (transition, stay, end)"),
        ({"action": "dance"}, "answered no action the contract knows (transition, stay, end)"),
        ({"action": "stay", "say": 5}, "answered a say that is not text"),
        ({"action": "transition", "node_id": 5}, WITHOUT_PROMPT),
        ({"action": "transition", "system_prompt": "Go on.", "tools": {}}, WITHOUT_PROMPT),
        ({"action": "stay", "node_id": None}, WRONG_STATE),
        ({"action": "stay", "collected_vars": [], "finished": "yes"}, WRONG_STATE),
        ({"action": "end", "finished": "yes"}, "answered a finished that is not a boolean"),
        ({"action": "end", "finished": 1}, "answered a finished that is not a boolean"),
        ({"action": "transition", **PROMPTED, "tools": ["lookup"]}, NO_NAME),
        ({"action": "transition", **PROMPTED, "tools": [{"name": ""}]}, NO_NAME),
        (
            {"action": "transition", **PROMPTED, "tools": [{"name": "a", "params": [1]}, {}]},
            "answered tool a with params that are not a JSON schema",
        ),
        (
            {"action": "transition", **PROMPTED, "tools": [TOOL, TOOL]},
            "answered two tools the model would both know as lookup",
        ),
        (
            {"action": "transition", **PROMPTED, "tools": [{"name": "end_call"}]},
            "answered tool end_call, whose name the call already gives one of its own "
            "functions (a Go tool, a transition or end_call)",
        ),
    ],
)
async def test_an_answer_out_of_contract_is_a_stay_saying_what_is_wrong(
    policy: PolicySimulator, answer: dict[str, object], message: str
) -> None:
    client = PolicyClient(policy.url, {}, "openai", reserved={"end_call"})
    before = await client.start()
    policy.push(PolicyAnswer.ok(answer))
    failed = await client.tool_call("anything", {})
    await client.close()
    assert (failed.action, failed.state, failed.error) == (Action.STAY, before, message)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (PolicyAnswer.fail(503), "POST /session answered HTTP 503"),
        (PolicyAnswer.garbage(), "POST /session answered a body that is not JSON"),
        (PolicyAnswer.ok(["a", "list"]), "POST /session answered JSON that is not an object"),
        (PolicyAnswer.ok({"tools": []}), f"POST /session {WITHOUT_PROMPT}"),
        (
            PolicyAnswer.ok({"system_prompt": "Hi.", "tools": None}),
            f"POST /session {WITHOUT_PROMPT}",
        ),
        (
            PolicyAnswer.ok({"system_prompt": "Hi.", "tools": [], "collected_vars": "x"}),
            f"POST /session {WRONG_STATE}",
        ),
        (
            PolicyAnswer.ok({"system_prompt": "Hi.", "tools": [{"description": "d"}]}),
            f"POST /session {NO_NAME}",
        ),
    ],
)
async def test_a_start_out_of_contract_fails_saying_what_is_wrong(
    answer: PolicyAnswer, reason: str
) -> None:
    async with PolicySimulator(answer) as policy:
        client = PolicyClient(policy.url, {}, "openai")
        with pytest.raises(PolicyError) as refused:
            await client.start()
        await client.close()
    assert refused.value.reason == reason
