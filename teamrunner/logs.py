"""Logging: one loguru configuration for the process, with keys scrubbed from every record."""

from __future__ import annotations

import os
import sys

from loguru import logger

from teamrunner.redaction import Redactor


def install_redaction(redactor: Redactor) -> None:
    """Scrub ``redactor``'s secrets from every record, whatever sinks are attached."""
    logger.configure(patcher=redactor.patch_log_record)


def configure_logging(redactor: Redactor, *, json_lines: bool = False) -> None:
    """Send logs to stderr at ``RUNNER_LOG_LEVEL`` (default INFO), scrubbed by ``redactor``."""
    level = os.environ.get("RUNNER_LOG_LEVEL", "INFO").upper()
    logger.remove()
    install_redaction(redactor)
    logger.add(sys.stderr, level=level, serialize=json_lines, backtrace=False, diagnose=False)
