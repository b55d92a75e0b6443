"""Gemini, as far as it can go here: built from a request, and the request it would send.

Gemini goes through Google's own SDK, and no simulator of its API exists in
this repository, so no call reaches it. These tests build the runner's Gemini
service from a /run request and ask pipecat's Gemini adapter what it would
send for the call's first turn: the system instruction and tools of its
start node, and the conversation, in Gemini's shape.
"""

from __future__ import annotations

from typing import Any, cast

from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.flows import FlowsFunctionSchema
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.services.google.llm import GoogleLLMService
from pydantic import SecretStr

from run import build_call
from teamrunner.config import Settings
from teamrunner.contract import RunRequest
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.manager.transport import open_sockets
from teamrunner.observe.journal import CallJournal
from teamrunner.plan import plan_call

GOOGLE_KEY = "AIza-test-not-a-real-google-key-00"


async def test_gemini_call_is_built_and_shapes_its_request_for_google() -> None:
    request = RunRequest.model_validate(
        {
            "id": "gemini-call",
            "llm_type": "gemini.gemini-2.5-flash",
            "llm_messages": [
                {"role": "system", "content": "You are Ava."},
                {"role": "user", "content": "Please email me the receipt."},
            ],
            "tools": [
                {
                    "name": "send email",
                    "description": "Send an email.",
                    "parameters": {
                        "type": "object",
                        "properties": {"to": {"type": "string"}},
                        "required": ["to"],
                    },
                }
            ],
        }
    )
    settings = Settings(keys={"GOOGLE_API_KEY": SecretStr(GOOGLE_KEY)})
    plan = plan_call(request, settings)
    runtime = Runtime.create(settings)
    # Built, never connected: no call reaches pipecat-manager or Google here.
    sockets = open_sockets("ws://127.0.0.1:9", plan.id, hears=False, redactor=runtime.redactor)
    call = build_call(plan, runtime, CallJournal(plan, runtime.metrics), sockets)

    [(name, llm)] = [(n, p) for n, p in call.components if n.startswith("LLM")]
    assert name == "LLM gemini.gemini-2.5-flash"
    assert isinstance(llm, GoogleLLMService)
    assert llm.settings.model == "gemini-2.5-flash"
    # What pipecat.flows gives the LLM as the call's one node is entered.
    node = call.flow.start_node
    functions = cast(list[FlowsFunctionSchema], node["functions"])
    tools = ToolsSchema(standard_tools=[f.to_function_schema() for f in functions])
    context = LLMContext(messages=cast(Any, plan.messages), tools=tools)
    params = await llm.get_llm_adapter().get_llm_invocation_params(
        context, system_instruction=node.get("role_message")
    )

    assert params["system_instruction"] == "You are Ava."
    [message] = params["messages"]
    assert message.role == "user"
    assert message.parts[0].text == "Please email me the receipt."
    [tool] = params["tools"]
    [declaration] = tool["function_declarations"]
    assert declaration["name"] == "send_email"
    assert declaration["parameters"]["required"] == ["to"]


def test_gemini_without_a_key_is_refused_naming_the_variable() -> None:
    request = RunRequest.model_validate({"id": "g", "llm_type": "gemini.gemini-2.5-flash"})

    try:
        plan_call(request, Settings())
    except Exception as e:
        message = str(e)
    else:
        message = ""

    assert "GOOGLE_API_KEY" in message
