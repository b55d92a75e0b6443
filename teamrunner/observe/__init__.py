"""What an operator sees of the runner: a call's journal, metrics, traces and logs.

::

    journal.py    one call's record (handoffs, tools, waits, errors, why it ended)
    metrics.py    the Prometheus metrics (a pool's summed at its front)
    tracing.py    OpenTelemetry: pipecat's spans and a span per handoff
    logs.py       one loguru configuration, every record scrubbed of keys
    redaction.py  keeping keys out of everything written
"""
