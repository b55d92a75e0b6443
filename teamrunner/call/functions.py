"""The one way a function is offered to a member's LLM: a pipecat.flows function schema.

A member's node offers Go's tools, its transitions, ``end_call`` and a remote
policy's tools, each built here from its name, description and parameters
and the handler pipecat.flows runs for it. Every one is synchronous
(``cancel_on_interruption=True``): the LLM waits for its result, and a
caller who talks over it takes the floor. An asynchronous function would
also add pipecat's "ASYNC TOOLS" block to the member's system prompt, which
nothing here needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipecat.flows import FlowFunctionHandler, FlowsFunctionSchema


def offered(
    name: str,
    description: str,
    handler: FlowFunctionHandler,
    properties: Mapping[str, Any] | None = None,
    required: Sequence[str] = (),
) -> FlowsFunctionSchema:
    """A function a member's node offers its LLM, run by ``handler`` when it is called."""
    return FlowsFunctionSchema(
        name=name,
        description=description,
        properties=dict(properties or {}),
        required=list(required),
        handler=handler,
        cancel_on_interruption=True,
    )
