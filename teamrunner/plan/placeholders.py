"""``{{ key }}`` placeholders in member prompts: one grammar, filled once, escaped for flows.

A member's ``init_prompt`` may say ``{{ company }}`` or ``{{ account.tier }}``;
the planner fills each from the member's ``parameter`` and leaves any it has
no value for as written, so a prompt's literal braces survive.

pipecat.flows renders the same grammar again when a node is entered, from
its own state, and fails on a key its state lacks. Prompts handed to flows
therefore pass through :func:`escape_for_flows`, which puts flows' escape (a
backslash) before every placeholder left, so flows prints it as written.
``tests/test_team_call.py`` proves such a placeholder reaches the LLM as
written, and fails if flows' grammar moves away from this one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# An identifier path between double braces, as pipecat.flows reads one.
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}")


def fill(prompt: str, parameters: Mapping[str, Any]) -> str:
    """Replace each placeholder with its parameter; ``a.b`` walks into nested objects."""

    def value(match: re.Match[str]) -> str:
        current: Any = parameters
        for part in match.group(1).split("."):
            if not isinstance(current, Mapping) or part not in current:
                return match.group(0)
            current = current[part]
        return str(current)

    return PLACEHOLDER.sub(value, prompt)


def escape_for_flows(text: str) -> str:
    """``text`` with every placeholder escaped, so pipecat.flows leaves it as written."""
    return PLACEHOLDER.sub(lambda m: "\\" + m.group(0), text)
