"""Logging: one loguru configuration for the process, with keys scrubbed from every record."""

from __future__ import annotations

import os
import sys
from typing import Any

from loguru import logger

from teamrunner.redaction import Redactor

# Warnings pipecat gives about choices the runner makes on purpose, with the reason.
EXPECTED_WARNINGS = {
    # Go tools are registered explicitly on the LLM router, so they are handed the
    # LLM's tool_call_id, while pipecat.flows advertises them with a handler of its own.
    "_warn_if_redundant_manual_registration",
}


def install_redaction(redactor: Redactor) -> None:
    """Scrub ``redactor``'s secrets from every record, whatever sinks are attached."""
    logger.configure(patcher=redactor.patch_log_record)


def not_expected(record: Any) -> bool:
    """A loguru filter dropping the warnings listed in ``EXPECTED_WARNINGS``."""
    return record["function"] not in EXPECTED_WARNINGS


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
