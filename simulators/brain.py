"""A scripted stand-in for an LLM, for running a team without a model: it follows keywords.

It understands nothing. Given a chat request it answers by rule:

* right after a transition, the new member introduces itself;
* after a tool result, it reads the result out (or says the tool failed);
* when the caller's words contain a keyword of one of the functions it was
  offered (``transfer_to_billing`` -> "billing", ``get_invoice`` ->
  "invoice"), it calls that function;
* a goodbye gets a goodbye; anything else is acknowledged.

It tells the members apart by the functions each was offered, which is how
a team call's requests differ. Plug it into ``OpenAISimulator(responder=...)``.
No model ships on PyPI that can call tools reliably, so the
demo's LLM leg is this, and says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simulators.openai import ChatRequest, Reply, text_of

# Words of a function name that say what it does, not what it is about.
VERBS = {"transfer", "to", "get", "set", "send", "the", "a", "an", "of", "for", "lookup", "look"}
GOODBYES = ("goodbye", "bye", "good bye")


@dataclass(frozen=True)
class Persona:
    """A member as the brain knows it: its name and the functions it is offered."""

    name: str
    functions: frozenset[str]


class KeywordBrain:
    """Answers chat requests by keyword rules (see the module docstring)."""

    def __init__(self, personas: Iterable[Persona] = ()) -> None:
        self._personas = list(personas)

    def __call__(self, request: ChatRequest) -> Reply:
        who = self._persona(request)
        last = request.messages[-1] if request.messages else {}
        if last.get("role") == "tool":
            return self._after_tool(last, who)
        said = (request.user_text or "").strip()
        if not said:
            return Reply.say(f"Hello, {who} speaking. How can I help you today?")
        if any(word in said.lower() for word in GOODBYES):
            return Reply.say("Goodbye, and thank you for calling.")
        function = _function_for(said, request.tool_names)
        if function is not None:
            return Reply.call(function, {})
        return Reply.say(f"I heard: {said} How else can I help?")

    def _persona(self, request: ChatRequest) -> str:
        offered = frozenset(request.tool_names)
        for persona in self._personas:
            if persona.functions == offered:
                return persona.name
        return "the assistant"

    def _after_tool(self, message: dict[str, Any], who: str) -> Reply:
        result = _json(text_of(message.get("content")))
        status = result.get("status") if isinstance(result, dict) else None
        if status == "transferred":
            return Reply.say(f"Hi, this is {who}. How can I help?")
        if status == "ok":
            return Reply.say(f"Here is what I found: {_spoken(result.get('data'))}.")
        if status == "error":
            return Reply.say("Sorry, that did not work. Can I help with something else?")
        return Reply.say("Done. What else can I do for you?")


def _function_for(said: str, functions: Iterable[str]) -> str | None:
    words = set(re.findall(r"[a-z]+", said.lower()))
    for function in functions:
        for keyword in _keywords(function):
            if any(_same_word(keyword, word) for word in words):
                return function
    return None


def _keywords(function: str) -> list[str]:
    return [w for w in re.split(r"[^a-z]+", function.lower()) if w and w not in VERBS]


def _same_word(keyword: str, word: str) -> bool:
    """Loose matching, so "bill" finds "billing" and "invoices" finds "invoice"."""
    short, long_ = sorted((keyword, word), key=len)
    return len(short) >= 4 and long_.startswith(short)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None


def _spoken(data: Any) -> str:
    if isinstance(data, Mapping):
        return ", ".join(f"{key} {_spoken(value)}" for key, value in data.items())
    if isinstance(data, list):
        return ", ".join(_spoken(item) for item in data)
    return str(data)
