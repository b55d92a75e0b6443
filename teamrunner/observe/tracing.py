"""OpenTelemetry tracing: pipecat's conversation and turn spans, and a span per handoff.

Off unless ``RUNNER_TRACING`` is set or an OTLP endpoint is configured with
the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; ``OTEL_SERVICE_NAME`` names the
service, default ``pipecat-team-runner``). When on, each call's
``PipelineWorker`` traces with the call id as its conversation id, and every
team handoff is a ``handoff`` span carrying the call id and the members it
joins. With tracing off the OpenTelemetry API is a no-op and costs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from loguru import logger
from opentelemetry import trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

TRACER = "pipecat-team-runner"


def setup_tracing() -> TracerProvider | None:
    """Export spans over OTLP/HTTP, unless the process already has a tracer provider.

    The exporter reads the standard ``OTEL_*`` variables itself. A provider
    set up before (a test's in-memory exporter, an operator's own
    instrumentation) is kept, and None returned: it is not ours to shut down.
    """
    from opentelemetry.sdk.trace import TracerProvider

    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME", "pipecat-team-runner")
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    logger.info(f"tracing on: spans go over OTLP as service {name}")
    return provider


@contextmanager
def handoff_span(
    call_id: str, function_name: str, from_member: str, to_member: str
) -> Iterator[trace.Span]:
    """A span around one team handoff."""
    tracer = trace.get_tracer(TRACER)
    attributes = {
        "conversation.id": call_id,
        "handoff.function": function_name,
        "handoff.from_member": from_member,
        "handoff.to_member": to_member,
    }
    with tracer.start_as_current_span("handoff", attributes=attributes) as span:
        yield span
