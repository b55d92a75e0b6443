"""A call's remote policy: the team's own HTTP service, deciding between turns what happens.

The service speaks two JSON endpoints (README, "Remote policy"):

* ``POST {url}/session`` with ``{"brain_config", "provider"}`` answers the
  first state: ``system_prompt``, ``tools`` (``{name, description, params}``),
  ``node_id`` and ``collected_vars``;
* ``POST {url}/tool-call`` with ``{"node_id", "tool": {"name", "args"},
  "collected_vars"}`` answers an ``action`` (``transition``, ``stay`` or
  ``end``), optionally what to ``say``, and the new ``node_id``,
  ``collected_vars`` and ``finished``; a ``transition`` also carries the new
  ``system_prompt`` and ``tools``, an ``end`` may carry a ``disposition``.

With a token, every request carries ``Authorization: Bearer <token>``.
Nothing here writes the token or the service's URL into a message (a URL may
carry a password); messages name the endpoint (``POST /session``).

``PolicyClient`` holds one call's state and is fail-safe the way the
contract asks: a start that fails is an error (the call does not start), but
a ``/tool-call`` that fails for any reason (network, non-2xx, a body that is
not the contract's, a transition without its prompt and tools, a timeout)
becomes a ``stay`` with no change of state, a warning, and an error result
for the model. Nothing here raises into a running call. An answer is read
by pydantic models, in the order a reader would check it (what it decides,
then the prompt and tools it must carry, then the policy's state, then each
tool), and the first field out of contract names what is wrong with it.

A policy tool is offered to the model under a name every provider accepts
(``plan.function_name``, as for Go's tools) and sent back to the service
under its own. A tool whose name collides with one of the call's own
functions (``reserved``), or with another of the policy's, is a body out of
contract: the model could not tell them apart.

What the call does with a decision (speaking ``say``, changing the model's
prompt and tools, handing a team call over, ending it) is
``control.PolicyControl``'s business, not this module's.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, TypeVar

from loguru import logger
from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from teamrunner.contract import POLICY_TIMEOUT_SECS
from teamrunner.errors import PeerError, PolicyError
from teamrunner.http_client import PeerClient
from teamrunner.plan import function_name

DEFAULT_TIMEOUT_SECS = POLICY_TIMEOUT_SECS


class Action(StrEnum):
    TRANSITION = "transition"
    STAY = "stay"
    END = "end"


@dataclass(frozen=True)
class PolicyTool:
    """A function the policy offers the model; ``params`` is its JSON schema."""

    name: str
    description: str
    params: Mapping[str, Any]

    @property
    def function(self) -> str:
        """The name the model sees: the policy's, made valid for every provider."""
        return function_name(self.name)

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.params.get("properties") or {})

    @property
    def required(self) -> list[str]:
        return list(self.params.get("required") or [])


@dataclass(frozen=True)
class PolicyState:
    """What the policy said last: the model's prompt and tools, and the policy's own state."""

    node_id: str
    system_prompt: str
    tools: tuple[PolicyTool, ...]
    collected_vars: Mapping[str, Any] = field(default_factory=dict)
    finished: bool = False

    def tool(self, function: str) -> PolicyTool | None:
        """The tool the model knows as ``function``."""
        return next((t for t in self.tools if t.function == function), None)


@dataclass(frozen=True)
class Decision:
    """What to do about one tool call.

    Attributes:
        action: transition, stay or end.
        state: The state after it (unchanged when the policy failed).
        say: A line to speak first, if any.
        disposition: How the call ended, for ``end``.
        error: Why the policy failed, when it did (the model is told; the
            call carries on as if it had said ``stay``).
    """

    action: Action
    state: PolicyState
    say: str | None = None
    disposition: str | None = None
    error: str | None = None

    def result(self) -> dict[str, Any]:
        """What the model is handed as the tool's result."""
        if self.error is not None:
            return {"status": "error", "error": f"the policy service failed: {self.error}"}
        answer: dict[str, Any] = {"status": "ok", "action": str(self.action)}
        if self.say:
            answer["said"] = self.say
        return answer


class _Malformed(Exception):
    """A body that is not the contract's."""


class PolicyClient:
    """One call's conversation with its policy service.

    Args:
        url: The service's base URL (``/session`` and ``/tool-call`` are below it).
        config: Sent as ``brain_config``, as given.
        provider: The call's LLM provider name (``openai``, ``grok``, ...).
        token: Sent as a bearer token on every request, if given.
        timeout_secs: How long one request may take.
        reserved: Function names the call already has (Go's tools, transitions,
            ``end_call``); a policy tool may not take one.
    """

    def __init__(
        self,
        url: str,
        config: Mapping[str, Any],
        provider: str,
        *,
        token: str | None = None,
        timeout_secs: float = DEFAULT_TIMEOUT_SECS,
        reserved: Collection[str] = (),
    ) -> None:
        self._url = url.rstrip("/")
        self._reserved = frozenset(reserved)
        self._config = dict(config)
        self._provider = provider
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout_secs
        self._http = PeerClient("remote policy", headers=headers)
        self._state: PolicyState | None = None

    @property
    def state(self) -> PolicyState:
        assert self._state is not None, "the policy has not been started"
        return self._state

    async def start(self) -> PolicyState:
        """Ask the service for the call's first state.

        Raises:
            PolicyError: the service could not be reached or answered out of contract.
        """
        body = {"brain_config": self._config, "provider": self._provider}
        try:
            answer = await self._post("/session", body)
            self._state = _state(answer, None, require_prompt=True, reserved=self._reserved)
        except _Malformed as e:
            raise PolicyError(f"POST /session {e}") from None
        except Exception as e:
            raise PolicyError(f"POST /session failed ({_describe(e)})") from None
        tools = ", ".join(t.name for t in self._state.tools) or "none"
        logger.info(f"remote policy: started at node {self._state.node_id}, offering {tools}")
        return self._state

    async def tool_call(self, name: str, args: Mapping[str, Any]) -> Decision:
        """What the policy makes of the model calling ``name``; never raises."""
        current = self.state
        body = {
            "node_id": current.node_id,
            "tool": {"name": name, "args": dict(args)},
            "collected_vars": dict(current.collected_vars),
        }
        try:
            answer = await self._post("/tool-call", body)
            decision = _decision(answer, current, self._reserved)
        except Exception as e:
            reason = str(e) if isinstance(e, _Malformed) else _describe(e)
            logger.warning(f"remote policy: /tool-call {name} failed ({reason}); staying")
            return Decision(Action.STAY, current, error=reason)
        self._state = decision.state
        logger.info(
            f"remote policy: {name} -> {decision.action} at node {decision.state.node_id}"
            + (f" (disposition {decision.disposition})" if decision.disposition else "")
        )
        return decision

    async def close(self) -> None:
        await self._http.close()

    async def _post(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        sent = await self._http.request("POST", self._url + path, json=body, timeout=self._timeout)
        text = sent.text()
        if not 200 <= sent.status < 300:
            raise _Malformed(f"answered HTTP {sent.status}")
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            raise _Malformed("answered a body that is not JSON") from None
        if not isinstance(answer, dict):
            raise _Malformed("answered JSON that is not an object")
        return answer


def _describe(error: Exception) -> str:
    """Why a request failed, in words that quote neither the URL nor a header."""
    return error.reason if isinstance(error, PeerError) else type(error).__name__


# What an answer out of contract is told, by the field the check failed on.
_WITHOUT_PROMPT = "answered without the system_prompt and tools the contract requires"
_WRONG_STATE = "answered a node_id or collected_vars of the wrong type"
_OUT_OF_CONTRACT = {
    "action": "answered no action the contract knows (transition, stay, end)",
    "say": "answered a say that is not text",
    "system_prompt": _WITHOUT_PROMPT,
    "tools": _WITHOUT_PROMPT,
    "node_id": _WRONG_STATE,
    "collected_vars": _WRONG_STATE,
    "finished": "answered a finished that is not a boolean",
}


class _DecisionAnswer(BaseModel):
    """What a ``/tool-call`` answer decides; checked first, in this order."""

    action: Action
    say: StrictStr | None = None
    disposition: Any = None


class _PromptAnswer(BaseModel):
    """The prompt and tools a ``/session`` answer, or a transition, must carry."""

    system_prompt: StrictStr
    tools: list[Any]


class _StateAnswer(BaseModel):
    """The policy's own state; a field an answer leaves out keeps its previous value."""

    node_id: StrictStr = ""
    collected_vars: dict[str, Any] = Field(default_factory=dict)
    finished: StrictBool = False


class _ToolAnswer(BaseModel):
    """One tool the policy offers; ``params`` left out (or empty) is a function of no arguments."""

    name: StrictStr = Field(min_length=1)
    description: Any = ""
    params: dict[str, Any] = Field(default=None, validate_default=True)

    @field_validator("params", mode="before")
    @classmethod
    def _no_params(cls, value: Any) -> Any:
        return value or {"type": "object", "properties": {}}


_TOOLS = TypeAdapter(list[_ToolAnswer])
_Answer = TypeVar("_Answer", bound=BaseModel)


def _checked(model: type[_Answer], answer: Mapping[str, Any]) -> _Answer:
    """``answer`` as ``model``; its first field out of contract (in field order) says why not."""
    try:
        return model.model_validate(answer)
    except ValidationError as e:
        raise _Malformed(_OUT_OF_CONTRACT[str(e.errors()[0]["loc"][0])]) from None


def _state(
    answer: Mapping[str, Any],
    previous: PolicyState | None,
    *,
    require_prompt: bool,
    reserved: frozenset[str],
) -> PolicyState:
    """The state an answer describes; fields it leaves out keep their previous values."""
    prompt = _checked(_PromptAnswer, answer) if require_prompt else None
    changed = _checked(_StateAnswer, answer).model_dump(exclude_unset=True)
    state = replace(previous or PolicyState(node_id="", system_prompt="", tools=()), **changed)
    if prompt is not None:
        tools = _tools(prompt.tools, reserved)
        state = replace(state, system_prompt=prompt.system_prompt, tools=tools)
    return state


def _tools(entries: list[Any], reserved: frozenset[str]) -> tuple[PolicyTool, ...]:
    try:
        answers = _TOOLS.validate_python(entries)
    except ValidationError as e:
        index, *field = e.errors()[0]["loc"]
        if field == ["params"]:
            name = entries[int(index)]["name"]
            raise _Malformed(
                f"answered tool {name} with params that are not a JSON schema"
            ) from None
        raise _Malformed("answered a tool without a name") from None
    tools = tuple(PolicyTool(t.name, str(t.description), t.params) for t in answers)
    seen: set[str] = set()
    for tool in tools:
        if tool.function in reserved:
            raise _Malformed(
                f"answered tool {tool.name}, whose name the call already gives one of its own "
                "functions (a Go tool, a transition or end_call)"
            )
        if tool.function in seen:
            raise _Malformed(f"answered two tools the model would both know as {tool.function}")
        seen.add(tool.function)
    return tools


def _decision(
    answer: Mapping[str, Any], current: PolicyState, reserved: frozenset[str]
) -> Decision:
    decided = _checked(_DecisionAnswer, answer)
    state = _state(
        answer, current, require_prompt=decided.action is Action.TRANSITION, reserved=reserved
    )
    return Decision(
        decided.action,
        state,
        say=decided.say or None,
        disposition=str(decided.disposition) if decided.disposition is not None else None,
    )
