"""Chat completion requests without the OpenAI SDK's per-request transform.

``AsyncOpenAI.chat.completions.create`` walks every message of the request
against the SDK's TypedDict annotations before sending it
(``async_maybe_transform``). For chat messages that walk changes nothing but
dropping unset arguments (no request field has an alias or a special format),
yet it is the runner's largest cost per LLM request: about 5 ms of CPU for a
30-message context, growing with the conversation, on the event loop that
every call in the process shares. Profiles of a team handoff showed it as two
thirds of the runner's CPU (see BENCHMARKS.md).

:class:`DirectChatClient` wraps a shared ``AsyncOpenAI`` and answers
``chat.completions.create(**params)`` -- the one call pipecat's OpenAI LLM
services make -- by posting the same JSON body through the SDK's public
``post`` method, so retries, authentication, errors and the streaming parser
are still the SDK's own. Everything else is delegated to the wrapped client.

The stream's chunks are built by pydantic's validator (``ValidatedChunk``)
rather than by the SDK's ``construct_type``, which walks each chunk's type
annotations in Python: 55 µs a chunk against 2.5 µs, measured on a 2-core AMD
EPYC, for every token of every reply, on the event loop every call shares. A
chunk the validator refuses (a provider's own shape of it) is built the SDK's
way. The SDK builds a stream's items with a class's ``build`` classmethod when
it has one (``openai._types.ModelBuilderProtocol``);
``tests/providers/test_chat_completions.py`` fails if it stops, and compares
the chunks with the SDK's own.
"""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI, AsyncStream, NotGiven, Omit
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import ValidationError

CHAT_COMPLETIONS_PATH = "/chat/completions"

_OPTION_ARGUMENTS = {
    "extra_headers": "headers",
    "extra_query": "params",
    "extra_body": "extra_json",
    "timeout": "timeout",
}


def _given(value: Any) -> bool:
    return not isinstance(value, NotGiven | Omit)


def request_parts(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``create``'s keyword arguments into the JSON body and the SDK's request options.

    Unset arguments (``NOT_GIVEN``/``omit``) are dropped, as the SDK drops
    them; ``extra_*`` and ``timeout`` become request options, so an
    ``extra_body`` is merged into the JSON by the SDK exactly as before.
    """
    body: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for name, value in params.items():
        if name in _OPTION_ARGUMENTS:
            if value is not None and _given(value):
                options[_OPTION_ARGUMENTS[name]] = value
        elif _given(value):
            body[name] = value
    return body, options


class ValidatedChunk(ChatCompletionChunk):
    """Names the way a stream's chunks are built; its items are ``ChatCompletionChunk``."""

    @classmethod
    def build(cls, *, response: Any, data: object) -> ChatCompletionChunk:
        """A chunk from its JSON, by pydantic's validator; the SDK's way if it refuses."""
        try:
            return ChatCompletionChunk.model_validate(data)
        except ValidationError:
            if not isinstance(data, dict):
                return data  # type: ignore[return-value]  # the SDK passes such data on as is
            return ChatCompletionChunk.construct(**data)


# The SDK's models build their validators on first use: here, at import (the warm-up's),
# and not at the first chunk of a process's first call (2.4 ms).
ChatCompletionChunk.model_rebuild(force=True)


class DirectChatCompletions:
    """``chat.completions`` whose ``create`` sends the request as given."""

    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client

    async def create(self, **params: Any) -> ChatCompletion | AsyncStream[ChatCompletionChunk]:
        body, options = request_parts(params)
        # The SDK types options as its RequestOptions TypedDict; request_parts
        # builds exactly those keys from create()'s own arguments.
        return await self._client.post(  # type: ignore[call-overload,no-any-return]
            CHAT_COMPLETIONS_PATH,
            body=body,
            options=options,
            cast_to=ChatCompletion,
            stream=bool(body.get("stream")),
            stream_cls=AsyncStream[ValidatedChunk],
        )


class _Chat:
    def __init__(self, completions: DirectChatCompletions) -> None:
        self.completions = completions


class DirectChatClient:
    """A shared ``AsyncOpenAI`` whose chat completions skip the request transform."""

    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client
        self.chat = _Chat(DirectChatCompletions(client))

    @property
    def wrapped(self) -> AsyncOpenAI:
        return self._client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
