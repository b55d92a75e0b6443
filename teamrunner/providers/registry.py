"""The provider registry: a provider is one entry, looked up by the name a request uses.

An entry is a factory function that returns pipecat's base service type,
registered with the environment variables it reads its key and endpoint
from. The vendor import lives inside the factory, so a provider nobody asks
for costs nothing. This module holds the mechanism only; the entries are in
``llm.py``, ``stt.py`` and ``tts.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from teamrunner.providers.resources import SharedResources

SpecT = TypeVar("SpecT")
ServiceT = TypeVar("ServiceT")

# A factory builds one service for a spec, reusing what the process shares.
Factory = Callable[[SpecT, "SharedResources"], ServiceT]


@dataclass(frozen=True)
class Provider(Generic[SpecT, ServiceT]):
    """One provider of one kind (LLM, STT or TTS).

    Attributes:
        name: The name requests use (``openai``, ``deepgram``, ``cartesia``...).
        factory: Builds the pipecat service for a spec, given the shared resources.
        key_variable: Environment variable holding the key when the request has none.
        endpoint_variable: Environment variable that points the provider elsewhere.
        needs_key: Whether a call cannot start without a key (local providers need none).
        check: Says what is wrong with a spec this provider cannot serve (a
            voice it does not have, a language it cannot hear), or None.
    """

    name: str
    factory: Callable[[SpecT, SharedResources], ServiceT]
    key_variable: str | None = None
    endpoint_variable: str | None = None
    needs_key: bool = True
    check: Callable[[SpecT], str | None] | None = None


class Registry(Generic[SpecT, ServiceT]):
    """Providers of one kind, by name."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._providers: dict[str, Provider[SpecT, ServiceT]] = {}

    def register(
        self,
        name: str,
        *,
        key_variable: str | None = None,
        endpoint_variable: str | None = None,
        local: bool = False,
        check: Callable[[SpecT], str | None] | None = None,
    ) -> Callable[[Factory[SpecT, ServiceT]], Factory[SpecT, ServiceT]]:
        """Decorator: register ``factory`` as the provider called ``name``.

        ``local`` marks a provider that runs on this machine and needs no key.
        """

        def add(factory: Factory[SpecT, ServiceT]) -> Factory[SpecT, ServiceT]:
            if name in self._providers:
                raise ValueError(f"{self.kind} provider {name!r} is registered twice")
            self._providers[name] = Provider(
                name=name,
                factory=factory,
                key_variable=key_variable,
                endpoint_variable=endpoint_variable,
                needs_key=not local,
                check=check,
            )
            return factory

        return add

    def get(self, name: str) -> Provider[SpecT, ServiceT] | None:
        return self._providers.get(name)

    def providers(self) -> list[Provider[SpecT, ServiceT]]:
        return list(self._providers.values())

    def names(self) -> list[str]:
        return sorted(self._providers)

    def accepted(self) -> str:
        """The accepted names, for error messages."""
        return ", ".join(self.names())
