"""Chat completions sent without the SDK's transform are the requests the SDK would send.

Each test sends the same ``create`` arguments twice to the OpenAI simulator,
once through the OpenAI SDK itself and once through ``DirectChatClient``,
and compares what the simulator received, and the chunks each way gave back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai
import pytest
from openai import NOT_GIVEN, omit
from openai.types.chat import ChatCompletionChunk

from simulators.openai import OpenAISimulator, Reply
from teamrunner.providers.chat_completions import (
    DirectChatClient,
    ValidatedChunk,
    request_parts,
)

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


def comparable(chunks: list[ChatCompletionChunk]) -> list[dict[str, Any]]:
    """The chunks as data, less what differs from one completion to the next (ids, time)."""
    dumped = [c.model_dump(exclude={"id", "created"}) for c in chunks]
    for chunk in dumped:
        for choice in chunk["choices"]:
            for call in choice["delta"]["tool_calls"] or []:
                call["id"] = call["id"] and "an id"
    return dumped


async def test_streamed_chunks_are_the_ones_the_sdk_builds_words_tool_calls_and_usage(
    sim: OpenAISimulator,
) -> None:
    reply = Reply.say("Let me pass you over, one moment.").and_call(
        "transfer_to_billing", {"reason": "a question on the bill", "urgent": True}
    )
    sim.push(reply, reply)
    client = openai.AsyncOpenAI(base_url=sim.base_url, api_key=API_KEY, max_retries=0)

    via_sdk = [c async for c in await client.chat.completions.create(**arguments())]
    completions = DirectChatClient(client).chat.completions
    direct = [c async for c in await completions.create(**arguments())]

    assert len(direct) > 10
    assert all(type(c) is ChatCompletionChunk for c in direct)
    assert comparable(direct) == comparable(via_sdk)
    assert direct[-1].usage is not None and direct[-1].usage == via_sdk[-1].usage
    await client.close()


async def test_the_sdk_builds_a_streams_chunks_with_the_validator_and_its_own_way_if_refused(
    sim: OpenAISimulator,
) -> None:
    # What the SDK does with each event's data for a stream of ValidatedChunk.
    client = openai.AsyncOpenAI(base_url=sim.base_url, api_key=API_KEY, max_retries=0)
    response = httpx2.Response(200, request=httpx2.Request("POST", sim.base_url))
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": "1733100000",  # a string: the validator makes it the int the type says
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
    }
    odd = {"id": "x", "choices": [{"delta": {"content": "Hi"}}]}  # no model, no created

    validated = client._process_response_data(data=chunk, cast_to=ValidatedChunk, response=response)
    kept = client._process_response_data(data=odd, cast_to=ValidatedChunk, response=response)

    assert type(validated) is ChatCompletionChunk and validated.created == 1733100000
    assert validated.choices[0].delta.content == "Hi"
    # Refused by the validator, it is built as the SDK builds it, missing fields and all.
    assert kept.model_dump() == ChatCompletionChunk.construct(**odd).model_dump()
    assert kept.choices[0].delta.content == "Hi"
    await client.close()
