"""A scripted stand-in for an LLM, for running a team without a model: it follows keywords.

It understands nothing. Given a chat request it answers by rule:

* right after a transition, the new member introduces itself;
* after a tool result, it reads the result out (or says the tool failed);
* when the caller's words contain a keyword of one of the functions it was
  offered (``transfer_to_billing`` -> "billing", ``get_invoice`` ->
  "invoice"), it calls that function;
* a function's required parameters are read off the caller's words by their
  JSON-schema type: a weekday fills a string parameter about a day or date
  (``book_appointment(day)`` hears "Tuesday"), a yes or no fills a boolean one
  (``confirm_booking(confirmed)`` hears "yes"). A function whose required
  parameters are all filled that way is called even without a keyword; one
  called by keyword gets whatever could be filled;
* a goodbye ends the call when it was offered ``end_call`` (the runner says
  the goodbye), and gets a goodbye otherwise; anything else is acknowledged;
* after a remote policy's result that says what the runner already said
  (``"said"``), it adds nothing.

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
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
YES = {"yes", "yeah", "yep", "sure", "correct", "right"}
NO = {"no", "nope", "not"}
# The runner's function for ending the call (teamrunner.plan.END_CALL_FUNCTION).
END_CALL = "end_call"


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
            if END_CALL in request.tool_names:
                return Reply.call(END_CALL, {})
            return Reply.say("Goodbye, and thank you for calling.")
        offered = [t for t in request.tools if _name(t) != END_CALL]
        chosen = _function_for(said, offered)
        if chosen is not None:
            return Reply.call(*chosen)
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
        if isinstance(result, dict) and result.get("said"):
            return Reply.say("")  # the runner said the policy's words; nothing to add
        if status == "transferred":
            return Reply.say(f"Hi, this is {who}. How can I help?")
        if status == "ok":
            return Reply.say(f"Here is what I found: {_spoken(result.get('data'))}.")
        if status == "error":
            return Reply.say("Sorry, that did not work. Can I help with something else?")
        return Reply.say("Done. What else can I do for you?")


def _name(tool: Mapping[str, Any]) -> str:
    return str(tool.get("function", {}).get("name", ""))


def _function_for(
    said: str, tools: Iterable[Mapping[str, Any]]
) -> tuple[str, dict[str, Any]] | None:
    """The first function the words call for, with its arguments read off them."""
    words = set(re.findall(r"[a-z]+", said.lower()))
    for tool in tools:
        function = _name(tool)
        arguments, complete = _arguments(words, tool.get("function", {}).get("parameters") or {})
        named = any(_same_word(k, w) for k in _keywords(function) for w in words)
        if named or (complete and arguments):
            return function, arguments
    return None


def _arguments(words: set[str], parameters: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The required parameters' values heard in ``words``, and whether all of them were."""
    properties = parameters.get("properties") or {}
    arguments: dict[str, Any] = {}
    complete = True
    for name in parameters.get("required") or []:
        schema = properties.get(name) or {}
        about = f"{name} {schema.get('description', '')}"
        value = _value(words, str(schema.get("type", "")), about)
        if value is None:
            complete = False
        else:
            arguments[name] = value
    return arguments, complete


def _value(words: set[str], kind: str, about: str) -> Any:
    if kind == "boolean":
        if words & YES:
            return True
        return False if words & NO else None
    if kind == "string" and re.search(r"day|date", about.lower()):
        return next((day.capitalize() for day in WEEKDAYS if day in words), None)
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
