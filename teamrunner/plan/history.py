"""The conversation so far (``llm_messages``), made into a context every provider accepts.

Also where a greeting goes when the conversation ends with the caller's turn,
which nobody has answered yet (``pending_turn``, ``greet_before_turn``).
"""

from __future__ import annotations

from typing import Any

from loguru import logger

from teamrunner.contract import Message

MESSAGE_ROLES = {"system", "developer", "user", "assistant", "tool"}


def valid_history(messages: list[Message]) -> list[dict[str, Any]]:
    """``llm_messages`` as a context every provider accepts.

    Providers reject a tool result with no call before it, and an assistant
    tool call whose result never follows. So an assistant message keeps only
    the calls answered by the tool messages right after it, those answers
    follow it in call order, and everything else about tools is dropped.
    Messages with no role, an unknown role, or nothing to say are dropped too.
    """
    result: list[dict[str, Any]] = []
    dropped = 0
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        role = message.role
        if role not in MESSAGE_ROLES or role == "tool":
            dropped += 1
            continue
        if role == "assistant" and message.tool_calls:
            answers: dict[str, Message] = {}
            while index < len(messages) and messages[index].role == "tool":
                answer = messages[index]
                if answer.tool_call_id:
                    answers.setdefault(answer.tool_call_id, answer)
                index += 1
            calls = [c for c in message.tool_calls if c.id in answers]
            dropped += len(message.tool_calls) - len(calls)
            if not calls and not message.content:
                continue
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ]
            result.append(entry)
            for call in calls:
                answer = answers[call.id]
                result.append(
                    {"role": "tool", "tool_call_id": call.id, "content": _text(answer.content)}
                )
            continue
        if not message.content:
            dropped += 1
            continue
        entry = {"role": role, "content": message.content}
        if message.name:
            entry["name"] = message.name
        result.append(entry)
    if dropped:
        logger.info(f"llm_messages: dropped {dropped} message(s) or tool call(s) no LLM accepts")
    return result


def _text(content: str | list[Any] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))


def pending_turn(history: list[dict[str, Any]]) -> bool:
    """Whether ``history`` ends with the caller's turn, which the AI has not answered yet."""
    return bool(history) and history[-1].get("role") == "user"


def greet_before_turn(history: list[dict[str, Any]], greeting: str) -> list[dict[str, Any]]:
    """``history`` with ``greeting`` as the AI's message just before the caller's pending turn.

    The caller's words came before the greeting was said, but the model is to
    answer them: put last, they are what its reply answers, exactly as when a
    caller speaks after the greeting, and no provider is asked to follow its
    own message with another.
    """
    start = len(history)
    while start > 0 and history[start - 1].get("role") == "user":
        start -= 1
    return [*history[:start], {"role": "assistant", "content": greeting}, *history[start:]]


def split_system_prompt(
    history: list[dict[str, Any]],
) -> tuple[str | None, list[dict[str, Any]]]:
    """Take a single AI's leading system messages out of ``history``, as its prompt.

    pipecat wants a system prompt as the LLM's system instruction since 1.9;
    the LLM receives the same first message either way.
    """
    index = 0
    while index < len(history) and history[index].get("role") == "system":
        index += 1
    parts = [str(m.get("content") or "") for m in history[:index]]
    prompt = "\n\n".join(p for p in parts if p)
    return prompt or None, history[index:]
