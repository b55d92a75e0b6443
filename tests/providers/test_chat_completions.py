"""Chat completions sent without the SDK's transform are the requests the SDK would send.

Each test sends the same ``create`` arguments twice to the OpenAI simulator,
once through the OpenAI SDK itself and once through ``DirectChatClient``,
and compares what the simulator received.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai import NOT_GIVEN, omit

from simulators.openai import OpenAISimulator, Reply
from teamrunner.providers.chat_completions import DirectChatClient, request_parts

API_KEY = "sk-direct-chat-test-key"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "transfer_to_billing",
            "description": "Hand the caller to billing.",
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    }
]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You greet callers."},
    {"role": "user", "content": [{"type": "text", "text": "Hi, bill please. Ünïcode ✓"}]},
    {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "transfer_to_billing", "arguments": "{}"},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "transferred"}'},
]


@pytest.fixture
async def sim() -> AsyncIterator[OpenAISimulator]:
    async with OpenAISimulator() as simulator:
        yield simulator


def arguments() -> dict[str, Any]:
    """``create`` arguments as pipecat passes them: unset settings included."""
    return {
        "model": "gpt-4o",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": "auto",
        "temperature": NOT_GIVEN,
        "seed": NOT_GIVEN,
        "top_p": omit,
        "max_tokens": NOT_GIVEN,
        "extra_body": {"provider_field": 7},
        "extra_headers": {"X-Call": "call-42"},
    }


async def test_the_simulator_receives_the_same_request_as_from_the_sdk(
    sim: OpenAISimulator,
) -> None:
    sim.push(Reply.say("From the SDK."), Reply.say("Sent directly."))
    client = openai.AsyncOpenAI(base_url=sim.base_url, api_key=API_KEY, max_retries=0)

    via_sdk = [c async for c in await client.chat.completions.create(**arguments())]
    completions = DirectChatClient(client).chat.completions
    direct = [c async for c in await completions.create(**arguments())]

    sdk_request, direct_request = sim.requests
    assert direct_request.raw == sdk_request.raw
    assert direct_request.raw["provider_field"] == 7
    assert "temperature" not in direct_request.raw and "top_p" not in direct_request.raw
    headers = {name.lower(): value for name, value in direct_request.headers.items()}
    assert headers["x-call"] == "call-42"
    assert direct_request.authorization == f"Bearer {API_KEY}"
    # The stream is parsed by the SDK as before.
    text = "".join(c.choices[0].delta.content or "" for c in direct if c.choices)
    assert text == "Sent directly."
    assert "".join(c.choices[0].delta.content or "" for c in via_sdk if c.choices) == (
        "From the SDK."
    )
    await client.close()


async def test_provider_errors_still_raise_the_sdks_exceptions(sim: OpenAISimulator) -> None:
    sim.push(Reply.fail(429, "slow down"))
    client = openai.AsyncOpenAI(base_url=sim.base_url, api_key=API_KEY, max_retries=0)

    with pytest.raises(openai.RateLimitError):
        await DirectChatClient(client).chat.completions.create(**arguments())
    await client.close()


def test_unset_arguments_are_dropped_and_extras_become_request_options() -> None:
    body, options = request_parts(
        {**arguments(), "timeout": 3.0, "extra_query": {"api-version": "1"}}
    )

    assert set(body) == {"model", "stream", "stream_options", "messages", "tools", "tool_choice"}
    assert options == {
        "extra_json": {"provider_field": 7},
        "headers": {"X-Call": "call-42"},
        "params": {"api-version": "1"},
        "timeout": 3.0,
    }


def test_everything_but_chat_completions_is_the_wrapped_client() -> None:
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key=API_KEY)
    direct = DirectChatClient(client)

    assert direct.wrapped is client
    assert direct.base_url == client.base_url
    assert direct.models is client.models
