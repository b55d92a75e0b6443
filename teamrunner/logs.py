"""Logging: one loguru configuration for the process, with keys scrubbed from every record.

Also the one place that knows which of pipecat's warnings are about choices
the runner makes on purpose. Each is recognised by the logger that writes it
and a fragment of its text (pipecat has no warning codes), and dropped by the
sink filter; ``tests/test_logs.py`` runs the situation for real and fails if
pipecat's wording moves and the filter stops recognising it.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

from loguru import logger

from teamrunner.redaction import Redactor


@dataclass(frozen=True)
class ExpectedWarning:
    """A pipecat warning the runner causes on purpose, and why."""

    name: str
    logger_name: str
    fragment: str
    why: str


EXPECTED_WARNINGS = (
    ExpectedWarning(
        name="redundant manual registration",
        logger_name="pipecat.services.llm_service",
        fragment="is registered with register_function() but its advertised FunctionSchema",
        why="Go tools are registered on the LLM router so they are handed the LLM's "
        "tool_call_id, while pipecat.flows advertises them with a handler of its own",
    ),
)


class ExpectedWarningFilter:
    """A loguru filter dropping ``EXPECTED_WARNINGS``; counts what it dropped, by name."""

    def __init__(self) -> None:
        self.dropped: Counter[str] = Counter()

    def __call__(self, record: Any) -> bool:
        if record["level"].name != "WARNING":
            return True
        for expected in EXPECTED_WARNINGS:
            if record["name"] == expected.logger_name and expected.fragment in record["message"]:
                self.dropped[expected.name] += 1
                return False
        return True


not_expected = ExpectedWarningFilter()


def install_redaction(redactor: Redactor) -> None:
    """Scrub ``redactor``'s secrets from every record, whatever sinks are attached."""
    logger.configure(patcher=redactor.patch_log_record)


def configure_logging(redactor: Redactor, *, json_lines: bool = False) -> None:
    """Send logs to stderr at ``RUNNER_LOG_LEVEL`` (default INFO), scrubbed by ``redactor``."""
    level = os.environ.get("RUNNER_LOG_LEVEL", "INFO").upper()
    logger.remove()
    install_redaction(redactor)
    logger.add(
        sys.stderr,
        level=level,
        serialize=json_lines,
        backtrace=False,
        diagnose=False,
        filter=not_expected,
    )
