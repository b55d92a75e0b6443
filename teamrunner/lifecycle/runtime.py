"""What every call in one runner process shares, made once at start-up and closed at shutdown.

The settings, the pooled clients and loaded speech models, the HTTP client to
pipecat-manager, the redactor that keeps keys out of everything written, and
the metrics.
A call's pipeline is assembled from its plan and this runtime; nothing here
belongs to one call.
"""

from __future__ import annotations

from dataclasses import dataclass

from teamrunner.config import Settings
from teamrunner.manager.client import ManagerClient
from teamrunner.observe.metrics import RunnerMetrics
from teamrunner.observe.redaction import Redactor
from teamrunner.providers.resources import OpenAIClients, SharedResources


@dataclass
class Runtime:
    """The process-wide parts a call is built from."""

    settings: Settings
    shared: SharedResources
    manager: ManagerClient
    redactor: Redactor
    metrics: RunnerMetrics

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        """A runtime for ``settings``, whose redactor already knows the environment's keys."""
        return cls(
            settings=settings,
            shared=SharedResources(
                openai_clients=OpenAIClients(settings.llm_timeout_secs, settings.llm_retries)
            ),
            manager=ManagerClient(settings),
            redactor=Redactor(settings.secrets()),
            metrics=RunnerMetrics(),
        )

    async def close(self) -> None:
        await self.manager.close()
        await self.shared.close()
