"""The runner's library: everything a call is made of, below the HTTP app and the call builder.

It never imports the top-level modules (``main``, ``run``, ``team_flow``,
``routing``) nor the simulators; they import it. See the README's layer
drawing for what lives where.

::

    config.py      the runner's settings, one typed object built from the environment
    contract.py    the ``/run`` request exactly as pipecat-manager sends it
    errors.py      the runner's errors, in one small hierarchy
    responses.py   every answer of the HTTP API, and the one error shape
    frames.py      the frames the runner adds to pipecat's
    audio.py       arithmetic on the call's 16-bit PCM audio
    transport.py   a call's transport: the seam to wherever its caller is
    http_client.py the one shape of the runner's HTTP clients: timeout and errors
    tls.py         the process's one TLS client context, shared by provider sockets
    pipecat_internals/  every use of a pipecat private, each guarded by a test
    plan/          from a ``/run`` request to a call plan, decided before the call
    providers/     the LLM, STT and TTS providers, by name
    speech/        turn-taking and the speech models behind it
    call/          what a call does while it runs, beyond its providers
    policy/        a remote policy, and what a call does with its answers
    manager/       the wire to pipecat-manager
    observe/       a call's journal, metrics, traces and logs
    lifecycle/     a call's life in a runner process: admitted, started, ended
    serving/       serving the HTTP API with uvicorn
    workers/       a pool of worker processes, one per core
"""
