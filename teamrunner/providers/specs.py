"""What a call asks of a provider: plain, hashable values with the key resolved.

Two members whose specs are equal get one service instance and one
connection, so everything that makes two services behave differently is a
field here, and nothing else is. Keys are fields too (two keys are two
accounts) but are left out of ``repr``, so a spec can be logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipecat.transcriptions.language import Language


def to_language(code: str | None) -> Language | None:
    """pipecat's ``Language`` for a code such as ``en`` or ``en-US`` (None stays None).

    Codes were checked when the call was planned, so this does not fail for them.
    """
    from pipecat.transcriptions.language import Language

    return Language(code) if code else None


@dataclass(frozen=True)
class LLMSpec:
    """An LLM: provider, model, and where to reach it."""

    provider: str
    model: str
    key: str | None = field(default=None, repr=False)
    endpoint: str | None = None

    def describe(self) -> str:
        return f"{self.provider}.{self.model}"

    @property
    def account(self) -> LLMSpec:
        """What one LLM service can serve: any model of one provider, key and endpoint.

        Members that differ only in model share a service; each member's model
        is set on it when the member takes the call.
        """
        return LLMSpec(provider=self.provider, model="", key=self.key, endpoint=self.endpoint)


@dataclass(frozen=True)
class STTSpec:
    """A speech-to-text service for the caller's audio."""

    provider: str
    language: str | None = None
    key: str | None = field(default=None, repr=False)
    endpoint: str | None = None

    def describe(self) -> str:
        return f"{self.provider} ({self.language or 'default language'})"


@dataclass(frozen=True)
class TTSSpec:
    """A voice."""

    provider: str
    voice_id: str | None = None
    language: str | None = None
    key: str | None = field(default=None, repr=False)
    endpoint: str | None = None

    def describe(self) -> str:
        return f"{self.provider} voice {self.voice_id or '(default)'}"
