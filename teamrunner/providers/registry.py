"""The provider registry: a provider is one entry, looked up by the name a request uses.

An entry is a factory function that returns pipecat's base service type,
registered with the environment variables it reads its key and endpoint
from, and with the modules it needs beyond the runner's own dependencies
(those of an optional extra, such as ``[local]``). The vendor import lives
inside the factory, so a provider nobody asks for costs nothing; the entry
names those modules too (``imports``), so that a process can import them
before its first call when it holds the provider's key (``warm_modules``). Whether an
install can serve a provider is found without importing anything
(``importlib.util.find_spec``), once per module per process. This module
holds the mechanism only; the entries are in ``llm.py``, ``stt.py`` and
``tts.py``.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from teamrunner.providers.resources import SharedResources

SpecT = TypeVar("SpecT")
ServiceT = TypeVar("ServiceT")

# A factory builds one service for a spec, reusing what the process shares.
Factory = Callable[[SpecT, "SharedResources"], ServiceT]

# The distribution whose extras bring the modules optional providers need.
DISTRIBUTION = "pipecat-team-runner"


@functools.cache
def installed(module: str) -> bool:
    """Whether ``module`` can be imported here; found without importing it.

    A dotted name's parent packages are imported to look inside them.
    """
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a missing parent package, or a module that refuses to be found
        return False


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
        requires: The modules it needs beyond the runner's own dependencies.
        extra: The extra of ``DISTRIBUTION`` that installs them.
        imports: The modules its factory imports, for a warm-up to import first.
    """

    name: str
    factory: Callable[[SpecT, SharedResources], ServiceT]
    key_variable: str | None = None
    endpoint_variable: str | None = None
    needs_key: bool = True
    check: Callable[[SpecT], str | None] | None = None
    requires: tuple[str, ...] = ()
    extra: str | None = None
    imports: tuple[str, ...] = ()

    def unavailable(self) -> str | None:
        """Why this install cannot serve the provider (a module it needs is missing), or None."""
        missing = [module for module in self.requires if not installed(module)]
        if not missing:
            return None
        problem = f"{self.name} is not installed here (no module {', '.join(missing)})"
        if self.extra:
            problem += f"; install it with: pip install '{DISTRIBUTION}[{self.extra}]'"
        return problem


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
        requires: tuple[str, ...] = (),
        extra: str | None = None,
        imports: tuple[str, ...] = (),
    ) -> Callable[[Factory[SpecT, ServiceT]], Factory[SpecT, ServiceT]]:
        """Decorator: register ``factory`` as the provider called ``name``.

        ``local`` marks a provider that runs on this machine and needs no key;
        ``requires`` names the modules it needs that the extra ``extra`` installs;
        ``imports`` the modules ``factory`` imports when it first builds a service.
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
                requires=requires,
                extra=extra,
                imports=imports,
            )
            return factory

        return add

    def get(self, name: str) -> Provider[SpecT, ServiceT] | None:
        return self._providers.get(name)

    def providers(self) -> list[Provider[SpecT, ServiceT]]:
        return list(self._providers.values())

    def names(self) -> list[str]:
        return sorted(self._providers)

    def servable(self) -> list[str]:
        """The names of the providers this install can serve, sorted."""
        return [name for name in self.names() if self._providers[name].unavailable() is None]

    def accepted(self) -> str:
        """The accepted names, for error messages."""
        return ", ".join(self.names())
