"""A scripted stand-in for an OpenAI-compatible chat-completions endpoint.

This is a simulator, not a model: it understands nothing it is sent. Each
request to ``POST /v1/chat/completions`` (or ``/chat/completions``) takes the
next ``Reply`` from a script; when the script runs out, an optional responder
function decides, and failing that the answer is "OK.". What it does speak
faithfully is the wire protocol: ``chat.completion`` objects, Server-Sent
Events of ``chat.completion.chunk`` objects with tool calls streamed in
fragments, the usage chunk, ``data: [DONE]``, and OpenAI's error JSON. So the
real ``openai`` SDK, and pipecat's ``OpenAILLMService`` built on it, run
against it unchanged. It also refuses what OpenAI refuses about the
conversation's shape: a request whose tool calls are not each answered by a
``tool`` message, or whose ``tool`` message answers no call, gets OpenAI's 400
(``tool_message_problem``), is kept in ``rejected`` and uses up no scripted
reply, so a test sees a client that would fail against the real API.

This module holds what to answer (``Reply``, ``ToolCall``, ``Failure``), what
was asked (``ChatRequest``, one per request, with the Authorization header so a
test can tell which key reached which provider), the server
(``OpenAISimulator``) and its command line. It does not hold a tokenizer (usage
figures are word counts), the models, embeddings, Responses or Realtime APIs,
or any check of the key it is sent.

Command line::

    python -m simulators.openai --port 8300 [--script script.json] [--name grok]

serves until Ctrl-C and prints one line per request. A script file is a JSON
list; each entry is one reply, used in order::

    [
      {"say": "Hello there."},
      {"call": "transfer_to_billing", "arguments": {"reason": "refund"}},
      {"say": "One moment.", "calls": [{"name": "lookup", "arguments": {"id": 7}}]},
      {"fail": 503, "message": "overloaded"}
    ]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiohttp import web

from simulators.server import Simulator

DEFAULT_REPLY_TEXT = "OK."
# Streamed tool arguments arrive in pieces of about this many characters, as a
# real model's do, so clients are exercised on reassembling them.
ARGUMENT_FRAGMENT_CHARS = 8
SCRIPT_KEYS = ("say", "call", "arguments", "calls", "fail", "message")


@dataclass(frozen=True)
class ToolCall:
    """One function call in a reply.

    ``arguments`` is normally a mapping, sent JSON-encoded; a string is sent
    as-is, which lets a test hand a client malformed JSON.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Failure:
    """An HTTP error answered in OpenAI's error shape.

    ``retry`` sets the ``x-should-retry`` header the OpenAI SDK obeys; left as
    None, the SDK decides by status and retries 408, 409, 429 and 5xx (twice by
    default, with backoff), each retry consuming the next scripted reply.
    """

    status: int
    message: str
    type: str
    code: str | None = None
    retry: bool | None = None
    param: str | None = None

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def response(self) -> web.Response:
        headers = {} if self.retry is None else {"x-should-retry": str(self.retry).lower()}
        return web.json_response(self.body(), status=self.status, headers=headers)


def default_error_type(status: int) -> str:
    """The ``type`` OpenAI gives errors of this status."""
    if status >= 500:
        return "server_error"
    if status == 429:
        return "requests"
    return "invalid_request_error"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, tool calls, text then tool calls, or a failure.

    A reply may also stall, as an overloaded provider does: ``after_hanging``
    accepts the request and sends nothing at all (not even headers) for a
    while; ``stalling_after`` streams some chunks and then goes quiet.
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    failure: Failure | None = None
    hang_secs: float = 0.0
    stall: tuple[int, float] | None = None

    def __post_init__(self) -> None:
        if self.failure is not None and (self.text is not None or self.tool_calls):
            raise ValueError("A failing Reply carries no text or tool calls.")

    @classmethod
    def say(cls, text: str) -> Reply:
        return cls(text=text)

    @classmethod
    def call(cls, name: str, arguments: Mapping[str, Any] | str | None = None) -> Reply:
        return cls(tool_calls=(ToolCall(name, {} if arguments is None else arguments),))

    def and_call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Reply:
        """This reply with one more tool call after the others.

        Chains: ``Reply.say("One moment.").and_call("a").and_call("b", {...})``.
        """
        call = ToolCall(name, {} if arguments is None else arguments)
        return replace(self, tool_calls=(*self.tool_calls, call))

    def after_hanging(self, seconds: float) -> Reply:
        """This reply, sent only after ``seconds`` of saying nothing at all."""
        return replace(self, hang_secs=seconds)

    def stalling_after(self, chunks: int, seconds: float) -> Reply:
        """This reply, streamed with a silence of ``seconds`` after its first ``chunks`` chunks."""
        return replace(self, stall=(chunks, seconds))

    @classmethod
    def fail(
        cls,
        status: int = 500,
        message: str = "The simulator was scripted to fail this request.",
        *,
        type: str | None = None,
        code: str | None = None,
        retry: bool | None = None,
    ) -> Reply:
        if not 400 <= status <= 599:
            raise ValueError(f"Reply.fail status {status} is not an HTTP error (400-599).")
        error_type = type or default_error_type(status)
        return cls(failure=Failure(status, message, error_type, code, retry))

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> Reply:
        """Build a reply from one script-file entry (format in the module docstring).

        Raises:
            ValueError: naming the unknown keys or the missing ``say``/``call``/``fail``.
        """
        unknown = sorted(set(entry) - set(SCRIPT_KEYS))
        if unknown:
            raise ValueError(f"Unknown script keys {unknown}; accepted keys are {SCRIPT_KEYS}.")
        if "fail" in entry:
            return cls.fail(int(entry["fail"]), entry.get("message", "scripted failure"))
        if not {"say", "call", "calls"} & set(entry):
            raise ValueError(f"Script entry {dict(entry)} has none of 'say', 'call', 'calls'.")
        reply = cls(text=entry.get("say"))
        if "call" in entry:
            reply = reply.and_call(entry["call"], entry.get("arguments"))
        for call in entry.get("calls", []):
            reply = reply.and_call(call["name"], call.get("arguments"))
        return reply

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"

    def describe(self) -> str:
        """One line for logs: ``say 'Hi.' + call lookup({"id": 7})``."""
        if self.failure is not None:
            return f"fail {self.failure.status} {self.failure.message!r}"
        parts = [] if self.text is None else [f"say {self.text!r}"]
        parts += [f"call {c.name}({c.arguments_json()})" for c in self.tool_calls]
        if self.hang_secs:
            parts.append(f"after hanging {self.hang_secs:g}s")
        if self.stall is not None:
            parts.append(f"stalling {self.stall[1]:g}s after {self.stall[0]} chunks")
        return " + ".join(parts)


Responder = Callable[["ChatRequest"], Reply]


def text_of(content: Any) -> str:
    """The text of a message's content, whether a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


@dataclass
class ChatRequest:
    """One chat-completions request as received, and when it was answered."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_names: list[str]
    system_prompt: str | None
    stream: bool
    authorization: str | None
    received_at: float
    raw: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    reply: Reply | None = None
    tool_call_ids: list[str] = field(default_factory=list)
    responded_at: float | None = None
    #: The client's address and port: requests on one kept-alive connection share it.
    peer: tuple[Any, ...] | None = None

    @classmethod
    def from_body(
        cls, body: dict[str, Any], headers: Mapping[str, str], received_at: float | None = None
    ) -> ChatRequest:
        messages = list(body.get("messages") or [])
        tools = list(body.get("tools") or [])
        system = [
            text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        ]
        return cls(
            model=str(body.get("model", "")),
            messages=messages,
            tools=tools,
            tool_names=[t.get("function", {}).get("name", "") for t in tools],
            system_prompt="\n\n".join(system) if system else None,
            stream=bool(body.get("stream", False)),
            authorization=headers.get("Authorization"),
            received_at=time.monotonic() if received_at is None else received_at,
            raw=body,
            headers=dict(headers),
        )

    @property
    def include_usage(self) -> bool:
        return bool((self.raw.get("stream_options") or {}).get("include_usage"))

    @property
    def user_text(self) -> str | None:
        """The text of the last user message, or None if there is none."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return text_of(message.get("content"))
        return None


def request_problem(body: Any) -> str | None:
    """Why a body is not a chat-completions request, or None if it is one."""
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    if not isinstance(body.get("model"), str):
        return "you must provide a model parameter"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "'messages' must be a non-empty array."
    return None


# OpenAI's own words for the two ways a conversation's tool messages can be out of shape.
UNANSWERED_TOOL_CALLS = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
UNCALLED_TOOL_MESSAGE = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)


def tool_message_problem(messages: list[Any]) -> tuple[str, str] | None:
    """Why OpenAI would refuse these messages' tool calls and results, as (message, param).

    Every id in an assistant message's ``tool_calls`` must be answered by a
    ``tool`` message among those that directly follow it, and each such
    ``tool`` message must answer one of them. None when the messages keep to
    that.
    """
    open_ids: list[str] = []  # the calls of the last assistant message, still unanswered
    called: set[str] = set()  # every call of that message, answered or not
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            answered = message.get("tool_call_id")
            if answered not in called:
                return UNCALLED_TOOL_MESSAGE, f"messages.[{index}].role"
            if answered in open_ids:
                open_ids.remove(answered)
            continue
        if open_ids:
            return UNANSWERED_TOOL_CALLS.format(ids=", ".join(open_ids)), f"messages.[{index}].role"
        calls = message.get("tool_calls") if role == "assistant" else None
        ids = [str(c.get("id")) for c in calls or [] if isinstance(c, dict)]
        open_ids, called = ids, set(ids)
    if open_ids:
        return UNANSWERED_TOOL_CALLS.format(ids=", ".join(open_ids)), "messages"
    return None


def word_pieces(text: str) -> list[str]:
    """Split text into word-sized deltas that join back to exactly the text."""
    return re.findall(r"\s*\S+|\s+$", text)


def fragments(text: str, size: int = ARGUMENT_FRAGMENT_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass(frozen=True)
class Completion:
    """A reply rendered for one request: ids assigned, ready to be sent either way."""

    id: str
    created: int
    model: str
    text: str | None
    tool_calls: tuple[tuple[str, ToolCall], ...]
    finish_reason: str
    prompt_tokens: int

    @property
    def usage(self) -> dict[str, int]:
        # Word counts stand in for tokens: enough for clients that report usage.
        completion = len(word_pieces(self.text or "")) + sum(
            len(fragments(c.arguments_json())) for _, c in self.tool_calls
        )
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
        }

    def tool_call_json(self, index: int) -> dict[str, Any]:
        call_id, call = self.tool_calls[index]
        return {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json()},
        }

    def as_json(self) -> dict[str, Any]:
        """The ``chat.completion`` object of a non-streamed answer."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text, "refusal": None}
        if self.tool_calls:
            message["tool_calls"] = [
                {k: v for k, v in self.tool_call_json(i).items() if k != "index"}
                for i in range(len(self.tool_calls))
            ]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self.usage,
        }

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }

    def deltas(self) -> Iterator[dict[str, Any]]:
        """The deltas OpenAI streams: role, words, then each call's head and argument pieces."""
        yield {"role": "assistant", "content": "" if self.text is not None else None}
        for piece in word_pieces(self.text or ""):
            yield {"content": piece}
        for index in range(len(self.tool_calls)):
            head = self.tool_call_json(index)
            arguments = head["function"]["arguments"]
            head["function"]["arguments"] = ""
            yield {"tool_calls": [head]}
            for piece in fragments(arguments):
                yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}

    def chunks(self, include_usage: bool) -> Iterator[dict[str, Any]]:
        """Every ``chat.completion.chunk`` of a streamed answer, usage chunk last if asked."""
        extra = {"usage": None} if include_usage else {}
        for delta in self.deltas():
            yield self.chunk(delta) | extra
        yield self.chunk({}, self.finish_reason) | extra
        if include_usage:
            yield self.chunk({}) | {"choices": [], "usage": self.usage}


def sse(data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {payload}\n\n".encode()


async def send_whole(request: web.Request, response: web.Response) -> web.Response:
    """Send a response before returning it, so ``responded_at`` marks when it left."""
    await response.prepare(request)
    await response.write_eof()
    return response


class OpenAISimulator(Simulator):
    """A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

    Point clients at ``base_url``. Each request takes the next scripted
    ``Reply``; then ``responder(request)`` if given; then "OK.". Every request
    is appended to ``requests`` before it is answered, except one OpenAI would
    refuse for its tool messages, which goes to ``rejected`` instead.
    """

    def __init__(
        self,
        script: list[Reply] | None = None,
        *,
        name: str = "openai",
        responder: Responder | None = None,
        first_token_delay: float = 0.0,
        token_delay: float = 0.0,
    ) -> None:
        super().__init__()
        self.name = name
        self.requests: list[ChatRequest] = []
        self.first_token_delay = first_token_delay
        self.token_delay = token_delay
        # Requests refused as OpenAI would refuse them (``tool_message_problem``).
        self.rejected: list[ChatRequest] = []
        self._script: deque[Reply] = deque(script or ())
        self.responder = responder
        self._completions = 0
        self._tool_calls = 0

    async def __aenter__(self) -> OpenAISimulator:
        # Narrows the base's return type, so ``async with OpenAISimulator() as sim``
        # types ``sim`` as this class.
        await self.start()
        return self

    @property
    def base_url(self) -> str:
        """What to pass as ``base_url`` to the OpenAI SDK or ``OpenAILLMService``."""
        return f"{self.http_url}/v1"

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        return len(self._script)

    def push(self, *replies: Reply) -> None:
        """Append replies to the script, to be used after those already there."""
        self._script.extend(replies)

    # Takes ``timeout`` like Simulator.wait_until, so tests read the same either way.
    async def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[ChatRequest]:
        """Wait until at least ``count`` requests have arrived; return them all."""
        await self.wait_until(lambda: len(self.requests) >= count, timeout)
        return list(self.requests)

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        return app

    def _next_reply(self, chat: ChatRequest) -> Reply:
        if self._script:
            return self._script.popleft()
        if self.responder is not None:
            return self.responder(chat)
        return Reply.say(DEFAULT_REPLY_TEXT)

    def _tool_call_id(self, number: int) -> str:
        """``call_<n>``, or ``call_<name>_<n>`` for a simulator not named openai.

        Two simulators can answer in one conversation (a team call's members),
        and a real provider never repeats a tool call id there.
        """
        return f"call_{number}" if self.name == "openai" else f"call_{self.name}_{number}"

    def _render(self, chat: ChatRequest, reply: Reply) -> Completion:
        self._completions += 1
        calls = []
        for call in reply.tool_calls:
            self._tool_calls += 1
            calls.append((self._tool_call_id(self._tool_calls), call))
        return Completion(
            id=f"chatcmpl-{self.name}-{self._completions}",
            created=int(time.time()),
            model=chat.model,
            text=reply.text,
            tool_calls=tuple(calls),
            finish_reason=reply.finish_reason,
            prompt_tokens=sum(len(text_of(m.get("content")).split()) for m in chat.messages),
        )

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        # Arrival is when the server hands the request over, before this simulator parses it.
        received_at = time.monotonic()
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = None
        problem = request_problem(body)
        if problem is not None:
            return Failure(400, problem, "invalid_request_error").response()

        chat = ChatRequest.from_body(body, request.headers, received_at)
        if request.transport is not None:
            chat.peer = request.transport.get_extra_info("peername")
        shape = tool_message_problem(chat.messages)
        if shape is not None:
            message, param = shape
            failure = Failure(400, message, "invalid_request_error", param=param)
            chat.reply = Reply(failure=failure)
            chat.responded_at = time.monotonic()
            self.rejected.append(chat)
            await self.notify()
            return failure.response()
        reply = chat.reply = self._next_reply(chat)
        completion = None if reply.failure else self._render(chat, reply)
        if completion is not None:
            chat.tool_call_ids = [call_id for call_id, _ in completion.tool_calls]
        self.requests.append(chat)
        await self.notify()
        try:
            if reply.hang_secs:
                await asyncio.sleep(reply.hang_secs)
            if completion is None:
                assert reply.failure is not None
                return await send_whole(request, reply.failure.response())
            if chat.stream:
                return await self._stream(request, completion, chat.include_usage, reply.stall)
            await asyncio.sleep(
                self.first_token_delay + self.token_delay * completion.usage["completion_tokens"]
            )
            return await send_whole(request, web.json_response(completion.as_json()))
        finally:
            chat.responded_at = time.monotonic()
            await self.notify()

    async def _stream(
        self,
        request: web.Request,
        completion: Completion,
        include_usage: bool,
        stall: tuple[int, float] | None = None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        delay = self.first_token_delay
        try:
            for number, chunk in enumerate(completion.chunks(include_usage)):
                if stall is not None and number == stall[0]:
                    await asyncio.sleep(stall[1])
                if delay:
                    await asyncio.sleep(delay)
                await response.write(sse(chunk))
                delay = self.token_delay
            await response.write(sse("[DONE]"))
            await response.write_eof()
        except ConnectionResetError:
            pass  # The client stopped reading (e.g. pipecat was interrupted); nothing to finish.
        return response


def load_script(path: Path) -> list[Reply]:
    """Read a script file (format in the module docstring).

    Raises:
        ValueError: naming the file and the entry that is not a valid reply.
    """
    entries = json.loads(path.read_text())
    if not isinstance(entries, list):
        raise ValueError(
            f"{path}: a script is a JSON list of replies, got {type(entries).__name__}."
        )
    replies = []
    for number, entry in enumerate(entries):
        try:
            replies.append(Reply.from_json(entry))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{path}: entry {number} is not a valid reply: {e}") from e
    return replies


def describe(chat: ChatRequest, name: str) -> str:
    """The command line's one line per request: model, last user message, reply."""
    reply = chat.reply.describe() if chat.reply else "?"
    return f"[{name}] {chat.model} | user: {chat.user_text!r} -> {reply}"


async def serve(sim: OpenAISimulator, host: str, port: int) -> None:
    """Serve until cancelled, printing each request as it arrives."""
    await sim.start(host, port)
    print(f"{sim.name}: scripted OpenAI simulator (not a model) at {sim.base_url}", flush=True)
    printed = 0
    try:
        while True:
            try:
                await sim.wait_for_requests(printed + 1, timeout=3600)
            except TimeoutError:
                continue
            for chat in sim.requests[printed:]:
                print(describe(chat, sim.name), flush=True)
            printed = len(sim.requests)
    finally:
        await sim.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.openai",
        description="Scripted OpenAI-compatible chat-completions simulator (not a model).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8300, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSON list of replies, used in order")
    parser.add_argument("--name", default="openai", help="label printed with each request")
    args = parser.parse_args(argv)
    script = load_script(args.script) if args.script else None
    sim = OpenAISimulator(script, name=args.name)
    try:
        asyncio.run(serve(sim, args.host, args.port))
    except KeyboardInterrupt:
        print(f"{sim.name}: stopped after {len(sim.requests)} requests", flush=True)


if __name__ == "__main__":
    main()
