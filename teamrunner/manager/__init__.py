"""The wire to pipecat-manager: its two websockets, the RTVI events it reads, tools, notices.

::

    transport.py  the two websockets, as pipecat transports (a ``CallTransport``)
    serializer.py their frames: pipecat's protobuf, audio the direct way, secrets scrubbed
    events.py     the RTVI events pipecat-manager reads, sent straight to its socket
    tools.py      the LLM's function calls, executed by pipecat-manager
    client.py     HTTP calls to pipecat-manager: tools and member switches
    urls.py       where a call's endpoints at pipecat-manager are
"""
