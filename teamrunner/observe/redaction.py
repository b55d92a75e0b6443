"""Keeping keys out of everything the runner writes: logs, error bodies, RTVI events.

The runner never formats a key into a message itself, but other code does:
a provider's SDK may log the URL it failed to reach (Cartesia carries the key
in its query string), or an error text may quote a header. So every key the
process knows (from its environment and from running calls) is registered
with one ``Redactor``, and the places where text leaves the process pass
through it: the loguru sink, the serializer of the output socket
(``teamrunner.manager.transport``), and HTTP error bodies.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"

# Shorter strings are not keys, and replacing them would garble ordinary text.
MIN_SECRET_LENGTH = 8


class Redactor:
    """The secrets this process must never write, and the means to scrub them.

    Secrets are reference-counted: two calls using the same key register it
    twice, and it stays registered until both have ended. Thread-safe, since
    loguru may format records off the event loop.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._ordered: tuple[str, ...] = ()
        self.add(secrets)

    def add(self, secrets: Iterable[str | None]) -> None:
        with self._lock:
            for secret in secrets:
                if secret and len(secret) >= MIN_SECRET_LENGTH:
                    self._counts[secret] += 1
            self._reorder()

    def discard(self, secrets: Iterable[str | None]) -> None:
        with self._lock:
            for secret in secrets:
                if secret and self._counts.get(secret, 0) > 0:
                    self._counts[secret] -= 1
                    if self._counts[secret] == 0:
                        del self._counts[secret]
            self._reorder()

    def _reorder(self) -> None:
        # Longest first, so a key that contains another is scrubbed whole.
        self._ordered = tuple(sorted(self._counts, key=len, reverse=True))

    def redact(self, text: str) -> str:
        for secret in self._ordered:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def redact_json(self, value: Any) -> Any:
        """A copy of a JSON-able value with every secret scrubbed from its strings."""
        if not self._ordered:
            return value
        text = json.dumps(value)
        scrubbed = self.redact(text)
        return value if scrubbed == text else json.loads(scrubbed)

    def patch_log_record(self, record: Any) -> None:
        """A loguru patcher: scrub the message, the bound fields and any exception text."""
        record["message"] = self.redact(record["message"])
        # A call's id and member, and its summary, are written with every line of it.
        extra = record["extra"]
        for key, value in extra.items():
            if isinstance(value, str):
                extra[key] = self.redact(value)
            elif isinstance(value, (dict, list)):
                extra[key] = self.redact_json(value)
        exception = record.get("exception")
        if exception is not None and exception.value is not None:
            text = str(exception.value)
            if self.redact(text) != text:
                record["exception"] = None
                record["message"] += f" ({type(exception.value).__name__}: {self.redact(text)})"
