"""Logging: one loguru configuration for the process, with keys scrubbed from every record.

A call's lines carry its id and current member as fields (``call_id``,
``member``), pipecat's own lines included: ``teamrunner.lifecycle.session`` binds them
with loguru's ``contextualize`` around the call's task. ``RUNNER_LOG_JSON``
writes each record as one flat JSON object: ``time``, ``level``,
``message``, ``logger``, ``function``, ``line``, then every bound field
(``call_id``, ``member``, and the end-of-call ``summary``).

Also the one place that knows which of pipecat's warnings are about choices
the runner makes on purpose. Each is recognised by the logger that writes it
and a fragment of its text (pipecat has no warning codes), and dropped by the
sink filter; ``tests/observe/test_logs.py`` runs the situation for real and fails if
pipecat's wording moves and the filter stops recognising it.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any, TextIO

from loguru import logger

from teamrunner.observe.redaction import Redactor


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


def configure_logging(redactor: Redactor, *, level: str = "INFO", json_lines: bool = False) -> None:
    """Send logs to stderr at ``level``, scrubbed by ``redactor``, as text or JSON lines."""
    logger.remove()
    install_redaction(redactor)
    sink: Any = JsonLines(sys.stderr) if json_lines else sys.stderr
    logger.add(
        sink,
        level=level.upper(),
        format=_text_format,
        backtrace=False,
        diagnose=False,
        filter=not_expected,
    )


def _text_format(record: Any) -> str:
    """loguru's default line, with the call's fields where the record has them."""
    extra = record["extra"]
    call = f"[{extra['call_id']} {extra.get('member', '')}] " if "call_id" in extra else ""
    return (
        "<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> | <level>{level: <8}</level> | "
        "<cyan>{name}</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan> - "
        + call.replace("{", "{{").replace("}", "}}")
        + "<level>{message}</level>\n{exception}"
    )


class JsonLines:
    """A loguru sink writing each record as one flat JSON object on its own line."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, message: Any) -> None:
        record = message.record
        line: dict[str, Any] = {
            "time": record["time"].isoformat(),
            "level": record["level"].name,
            "message": record["message"],
            "logger": record["name"],
            "function": record["function"],
            "line": record["line"],
        }
        for key, value in record["extra"].items():
            line[key] = value if isinstance(value, (int, float, bool, dict, list)) else str(value)
        if record["exception"] is not None and record["exception"].type is not None:
            line["exception"] = record["exception"].type.__name__
        self._stream.write(json.dumps(line, default=str) + "\n")
        self._stream.flush()
