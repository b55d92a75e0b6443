"""The OpenAI simulator speaks chat completions well enough for the real clients.

Every test drives it with a real client over loopback: the ``openai`` SDK,
pipecat's ``OpenAILLMService`` under ``run_test``, raw aiohttp for the exact
SSE bytes, or the command line in a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from openai.types.chat import (
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
    ChatCompletionUserMessageParam,
)
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.frames.frames import ErrorFrame, LLMContextFrame, LLMTextFrame
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.services.llm_service import FunctionCallParams
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.tests.utils import run_test

from simulators.openai import ChatRequest, OpenAISimulator, Reply, load_script

API_KEY = "sk-sim-test-key"
REPO_ROOT = Path(__file__).resolve().parents[2]
USER: ChatCompletionUserMessageParam = {"role": "user", "content": "Hi, I need help with my bill."}


@pytest.fixture
async def sim() -> AsyncIterator[OpenAISimulator]:
    simulator = OpenAISimulator()
    await simulator.start()
    yield simulator
    await simulator.stop()


def sdk(sim: OpenAISimulator, max_retries: int = 0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=sim.base_url, api_key=API_KEY, max_retries=max_retries)


def transfer_tools() -> ToolsSchema:
    transfer = FunctionSchema(
        name="transfer_to_billing",
        description="Hand the caller to the billing agent.",
        properties={"reason": {"type": "string"}},
        required=["reason"],
    )
    hang_up = FunctionSchema(
        name="hang_up", description="End the call.", properties={}, required=[]
    )
    return ToolsSchema(standard_tools=[transfer, hang_up])


def pipecat_llm(sim: OpenAISimulator, **settings: Any) -> OpenAILLMService:
    return OpenAILLMService(
        api_key=API_KEY,
        base_url=sim.base_url,
        settings=OpenAILLMService.Settings(model="gpt-sim-1", **settings),
    )


def spoken(frames: Any) -> str:
    return "".join(f.text for f in frames if isinstance(f, LLMTextFrame))


# --- the openai SDK -------------------------------------------------------------------------


async def test_streamed_text_arrives_as_the_scripted_text_in_several_deltas(sim):
    sim.push(Reply.say("Hello there, how can I help?"))
    stream = await sdk(sim).chat.completions.create(
        model="gpt-4.1", messages=[USER], stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]

    deltas = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(deltas) == "Hello there, how can I help?"
    assert len(deltas) == 6
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert all(c.object == "chat.completion.chunk" and c.model == "gpt-4.1" for c in chunks)
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None and usage.completion_tokens == 6


async def test_streamed_tool_call_arrives_with_name_json_arguments_and_tool_calls_finish(sim):
    sim.push(Reply.call("transfer_to_billing", {"reason": "disputed charge on March bill"}))
    stream = await sdk(sim).chat.completions.create(model="m", messages=[USER], stream=True)
    chunks = [chunk async for chunk in stream]

    calls = [
        call.model_dump()
        for c in chunks
        for call in c.choices[0].delta.tool_calls or []  # one call per delta, as OpenAI streams
    ]
    assert calls[0]["id"] == "call_1" and calls[0]["type"] == "function"
    assert calls[0]["function"] == {"name": "transfer_to_billing", "arguments": ""}
    assert len(calls) > 2, "arguments should arrive in several fragments"
    assert all(c["index"] == 0 and c["id"] is None for c in calls[1:])
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments) == {"reason": "disputed charge on March bill"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].usage is None, "no usage chunk unless include_usage is asked for"


async def test_plain_completion_returns_text_and_several_tool_calls_in_one_message(sim):
    sim.push(Reply.say("One moment.").and_call("lookup", {"id": 7}).and_call("hang_up"))
    completion = await sdk(sim).chat.completions.create(model="gpt-4.1", messages=[USER])

    assert completion.object == "chat.completion"
    assert completion.choices[0].finish_reason == "tool_calls"
    message = completion.choices[0].message.model_dump()
    assert message["content"] == "One moment."
    assert [(c["id"], c["function"]["name"]) for c in message["tool_calls"]] == [
        ("call_1", "lookup"),
        ("call_2", "hang_up"),
    ]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"id": 7}
    assert sim.requests[0].stream is False
    assert sim.requests[0].tool_call_ids == ["call_1", "call_2"]


async def test_fail_raises_the_sdk_status_error_with_openai_error_body(sim):
    sim.push(Reply.fail(503, "upstream overloaded"))
    with pytest.raises(openai.APIStatusError) as caught:
        await sdk(sim).chat.completions.create(model="m", messages=[USER], stream=True)

    assert caught.value.status_code == 503
    assert caught.value.body == {
        "message": "upstream overloaded",
        "type": "server_error",
        "param": None,
        "code": None,
    }


async def test_fail_told_not_to_retry_stops_the_sdk_retrying(sim):
    sim.push(Reply.fail(500, "boom", retry=False), Reply.say("Recovered."))
    with pytest.raises(openai.InternalServerError):
        await sdk(sim, max_retries=2).chat.completions.create(model="m", messages=[USER])

    assert len(sim.requests) == 1 and sim.pending == 1


async def test_requests_record_prompt_tools_authorization_and_timing(sim):
    tools: list[ChatCompletionToolParam] = [
        {"type": "function", "function": {"name": "hang_up", "parameters": {}}}
    ]
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "You are Ava."},
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        USER,
    ]
    await sdk(sim).chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)

    [request] = await sim.wait_for_requests(1, timeout=2)
    assert request.system_prompt == "You are Ava.\n\nBe brief."
    assert request.messages == messages and request.tools == tools
    assert request.tool_names == ["hang_up"] and request.user_text == USER["content"]
    assert request.authorization == f"Bearer {API_KEY}"
    assert request.raw["model"] == request.model == "gpt-4.1"
    assert request.responded_at is not None and request.responded_at >= request.received_at


async def test_exhausted_script_falls_to_responder_then_default_ok():
    async with OpenAISimulator([Reply.say("Scripted.")]) as plain:
        client = sdk(plain)
        texts = [
            (await client.chat.completions.create(model="m", messages=[USER])).choices[0]
            for _ in range(2)
        ]
    assert [c.message.content for c in texts] == ["Scripted.", "OK."]

    def echo(request: ChatRequest) -> Reply:
        return Reply.say(f"You said: {request.user_text}")

    async with OpenAISimulator(responder=echo) as echoing:
        completion = await sdk(echoing).chat.completions.create(model="m", messages=[USER])
    assert completion.choices[0].message.content == f"You said: {USER['content']}"


async def test_first_token_delay_holds_back_the_stream(sim):
    sim.first_token_delay = 0.3
    started = time.monotonic()
    stream = await sdk(sim).chat.completions.create(model="m", messages=[USER], stream=True)
    [chunk async for chunk in stream]
    assert time.monotonic() - started >= 0.3


# --- the wire itself ------------------------------------------------------------------------


async def test_stream_is_sse_data_lines_ending_in_done(sim):
    sim.push(Reply.say("Hi there."))
    body = {"model": "m", "messages": [USER], "stream": True}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.http_url}/chat/completions", json=body) as response,
    ):
        assert response.headers["Content-Type"].startswith("text/event-stream")
        raw = await response.text()

    events = raw.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-2]]
    assert all(e.startswith("data: ") for e in events[:-2])
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:3]] == ["Hi", " there."]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_malformed_request_gets_openai_400_and_is_not_recorded(sim):
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.base_url}/chat/completions", json={"model": "m"}) as response,
    ):
        assert response.status == 400
        error = (await response.json())["error"]
    assert error["type"] == "invalid_request_error" and "messages" in error["message"]
    assert sim.requests == []


def tool_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "lookup", "arguments": "{}"},
    }


def tool_result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "{}"}


ANSWERED_BATCH = [
    USER,
    {"role": "assistant", "content": None, "tool_calls": [tool_call("a"), tool_call("b")]},
    tool_result("b"),
    tool_result("a"),
    {"role": "assistant", "tool_calls": [tool_call("c")]},
    tool_result("c"),
    USER,
]
UNANSWERED = {
    "a call with no result before the next message": (
        [
            USER,
            {"role": "assistant", "tool_calls": [tool_call("a"), tool_call("b")]},
            tool_result("a"),
            USER,
        ],
        "b",
        "messages.[3].role",
    ),
    "a call with no result at the end": (
        [USER, {"role": "assistant", "tool_calls": [tool_call("a")]}],
        "a",
        "messages",
    ),
}


async def test_a_conversation_whose_tool_calls_are_all_answered_is_served(sim):
    messages: Any = ANSWERED_BATCH
    completion = await sdk(sim).chat.completions.create(model="m", messages=messages)

    assert completion.choices[0].message.content == "OK."
    assert sim.rejected == [] and len(sim.requests) == 1


@pytest.mark.parametrize("case", UNANSWERED.values(), ids=UNANSWERED.keys())
async def test_a_tool_call_left_unanswered_gets_openais_400_and_uses_no_reply(sim, case):
    messages, unanswered, param = case
    sim.push(Reply.say("Scripted."))
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk(sim, max_retries=2).chat.completions.create(model="m", messages=messages)

    assert caught.value.body == {
        "message": "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        f"response messages: {unanswered}",
        "type": "invalid_request_error",
        "param": param,
        "code": None,
    }
    assert sim.requests == [] and sim.pending == 1
    [rejected] = sim.rejected
    assert rejected.messages == messages


async def test_a_tool_message_that_answers_no_call_gets_openais_400(sim):
    messages: Any = [USER, {"role": "assistant", "content": "Hi."}, tool_result("a")]
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk(sim).chat.completions.create(model="m", messages=messages)

    assert caught.value.body == {
        "message": "Invalid parameter: messages with role 'tool' must be a response to a "
        "preceeding message with 'tool_calls'.",
        "type": "invalid_request_error",
        "param": "messages.[2].role",
        "code": None,
    }
    assert len(sim.rejected) == 1


# --- pipecat's OpenAILLMService -------------------------------------------------------------


async def test_pipecat_speaks_the_scripted_reply_and_sim_records_what_pipecat_sent(sim):
    sim.push(Reply.say("Sure, let me look at your bill."))
    llm = pipecat_llm(sim, system_instruction="You are Ava, a support agent.")
    context = LLMContext(messages=[USER], tools=transfer_tools())

    down, _ = await run_test(llm, frames_to_send=[LLMContextFrame(context)])

    assert spoken(down) == "Sure, let me look at your bill."
    [request] = await sim.wait_for_requests(1, timeout=2)
    assert request.system_prompt == "You are Ava, a support agent."
    assert request.user_text == USER["content"]
    assert request.tool_names == ["transfer_to_billing", "hang_up"]
    assert request.model == "gpt-sim-1" and request.stream is True
    assert request.authorization == f"Bearer {API_KEY}"
    assert request.raw["stream_options"] == {"include_usage": True}


async def test_pipecat_system_message_in_context_is_recorded_as_system_prompt(sim):
    # Deprecated since pipecat 1.9 (it warns under an "always" filter), still sent as-is.
    context = LLMContext(messages=[{"role": "system", "content": "Legacy prompt."}, USER])
    await run_test(pipecat_llm(sim), frames_to_send=[LLMContextFrame(context)])

    [request] = await sim.wait_for_requests(1, timeout=2)
    assert request.system_prompt == "Legacy prompt." and request.messages[1] == USER


async def test_pipecat_runs_the_registered_handlers_for_scripted_tool_calls(sim):
    sim.push(
        Reply.say("Transferring you now.")
        .and_call("transfer_to_billing", {"reason": "bill"})
        .and_call("hang_up")
    )
    llm = pipecat_llm(sim)
    calls: list[tuple[str, str, dict[str, Any]]] = []

    async def record(params: FunctionCallParams) -> None:
        calls.append((params.function_name, params.tool_call_id, dict(params.arguments)))
        await params.result_callback({"done": True})

    llm.register_function("transfer_to_billing", record)
    llm.register_function("hang_up", record)
    context = LLMContext(messages=[USER], tools=transfer_tools())

    down, _ = await run_test(llm, frames_to_send=[LLMContextFrame(context)])

    assert spoken(down) == "Transferring you now."
    assert sorted(calls) == [
        ("hang_up", "call_2", {}),
        ("transfer_to_billing", "call_1", {"reason": "bill"}),
    ]


async def test_pipecat_reports_a_scripted_failure_upstream_as_an_error_frame(sim):
    # retry=False: otherwise the SDK inside pipecat retries a 500 and gets the next reply.
    sim.push(Reply.fail(500, "upstream exploded", retry=False))
    context = LLMContext(messages=[USER])

    down, up = await run_test(pipecat_llm(sim), frames_to_send=[LLMContextFrame(context)])

    errors = [f for f in up if isinstance(f, ErrorFrame)]
    assert len(errors) == 1 and "upstream exploded" in errors[0].error
    assert spoken(down) == "" and len(sim.requests) == 1


async def test_two_simulators_record_only_their_own_requests():
    async with (
        OpenAISimulator([Reply.say("From OpenAI.")], name="openai") as first,
        OpenAISimulator([Reply.say("From Grok.")], name="grok") as second,
    ):
        context = LLMContext(messages=[USER])
        down_first, _ = await run_test(
            pipecat_llm(first), frames_to_send=[LLMContextFrame(context)]
        )
        grok = OpenAILLMService(api_key="xai-key", base_url=second.base_url)
        down_second, _ = await run_test(grok, frames_to_send=[LLMContextFrame(context)])

        assert spoken(down_first) == "From OpenAI." and spoken(down_second) == "From Grok."
        assert [r.authorization for r in first.requests] == [f"Bearer {API_KEY}"]
        assert [r.authorization for r in second.requests] == ["Bearer xai-key"]


# --- script files and the command line ------------------------------------------------------


def test_script_file_reads_say_call_mixed_and_fail_entries(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            [
                {"say": "Hello."},
                {"call": "hang_up"},
                {"say": "One moment.", "calls": [{"name": "lookup", "arguments": {"id": 7}}]},
                {"fail": 429, "message": "slow down"},
            ]
        )
    )
    assert load_script(path) == [
        Reply.say("Hello."),
        Reply.call("hang_up"),
        Reply.say("One moment.").and_call("lookup", {"id": 7}),
        Reply.fail(429, "slow down"),
    ]


def test_script_file_with_an_unknown_key_names_the_entry(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"say": "ok"}, {"sya": "typo"}]))
    with pytest.raises(ValueError, match=r"entry 1 .*'sya'"):
        load_script(path)


async def test_command_line_prints_base_url_and_one_line_per_request(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"say": "Scripted hello."}]))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "simulators.openai", "--port", "0", "--name", "grok", "--script", str(script)),
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        banner = (await asyncio.wait_for(process.stdout.readline(), 5)).decode()
        base_url = re.search(r"http://127\.0\.0\.1:\d+/v1", banner)
        assert base_url is not None and "not a model" in banner
        client = openai.AsyncOpenAI(base_url=base_url.group(0), api_key="k", max_retries=0)
        completion = await client.chat.completions.create(model="grok-3", messages=[USER])
        assert completion.choices[0].message.content == "Scripted hello."
        line = (await asyncio.wait_for(process.stdout.readline(), 5)).decode()
        assert "[grok] grok-3" in line and "my bill" in line and "Scripted hello." in line
    finally:
        process.send_signal(signal.SIGINT)
        await asyncio.wait_for(process.wait(), 5)
    assert process.returncode == 0
