"""The functions a member's LLM may call: Go's tools and the team's transitions.

Every provider accepts only some function names (``^[a-zA-Z0-9_-]{1,64}$``
for OpenAI and Gemini), while pipecat-manager names tools as it likes. Each
function therefore has two names: the one the LLM sees, made valid by
:func:`function_name`, and the one pipecat-manager knows, sent back to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from teamrunner.contract import Tool
from teamrunner.errors import Problem
from teamrunner.plan.model import ToolPlan

# What OpenAI and Gemini accept as a function name.
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def function_name(name: str) -> str:
    """``name`` made acceptable to OpenAI and Gemini.

    Each character outside the set becomes ``_`` and the result is cut at 64,
    so the same name always maps to the same function name.
    """
    if FUNCTION_NAME.match(name):
        return name
    return (re.sub(r"[^a-zA-Z0-9_-]", "_", name) or "_")[:64]


def plan_tools(tools: Sequence[Tool]) -> list[ToolPlan]:
    return [
        ToolPlan(
            name=function_name(tool.name),
            wire_name=tool.name,
            description=tool.description,
            parameters=tool.parameters,
            run_llm=tool.run_llm,
        )
        for tool in tools
    ]


def check_names(names: Sequence[tuple[str, str]], problems: list[Problem]) -> None:
    """Refuse two functions that one LLM would see under one name.

    Args:
        names: For each function, the field that names it and the name the LLM sees.
        problems: Where a problem is added for each function after the first of a name.
    """
    first: dict[str, str] = {}
    for where, valid in names:
        if valid not in first:
            first[valid] = where
            continue
        problems.append(
            Problem(
                where,
                f"gives the LLM the same function name as {first[valid]} "
                "(names are compared after characters other than letters, digits, _ and - "
                "become _); rename one",
            )
        )
