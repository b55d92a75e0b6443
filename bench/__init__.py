"""Benchmarks: what routing costs, how fast a handoff is, how many calls a core carries.

Each module runs with one command (``python -m bench.<name>``) from a clean
checkout, prints a table, and measures against a baseline taken in the same
run. The runner is a process of its own, as deployed; the simulators run in
the benchmark's process with zero provider latency, so what is measured is
the runner's own cost. Results and the commands that produced them are
recorded in ``BENCHMARKS.md``.

::

    harness.py           what they share: the runner as a process, its CPU and memory
    routing_overhead.py  CPU per caller and bot audio frame, team against single AI
    handoff.py           how long a handoff takes, text and voice
    first_handoff.py     the first handoff of a fresh call
    handoff_timeline.py  that first handoff, stage by stage (with ``timeline/``)
    pickup.py            ``POST /run`` to 200, to the output socket, to the first words
    first_call.py        a fresh runner's first calls against those after them
    llm_turns.py         whether a call's turns each open a new LLM connection
    run_latency.py       single-AI ``POST /run`` to 200, against a lean pipecat runner
    lean_runner.py       that lean runner: stock pipecat serving the same text call
    starts.py            ``POST /run`` latency in bursts of concurrent starts
    startup.py           process start to ``/health`` and to ``/ready``
    capacity.py          concurrent voice calls per core and per pod
    memory.py            resident memory over many sequential calls
    gc_pauses.py         garbage-collection pauses while calls come and go
    gc_probe.py          ``main.py`` with every garbage collection timed, for gc_pauses
    metrics_cost.py      pipecat's provider metrics, on against off
    load_profile.py      where a loaded runner's CPU goes (py-spy)
    vad_cost.py          a call's VAD, CPU per second of caller audio, against pipecat's
    output_cost.py       CPU per bot audio chunk through the output socket, two checkouts
    serializer_cost.py   CPU per audio frame read or written on pipecat-manager's sockets
    reply_cost.py        CPU per streamed reply and per chunk of its stream, checkouts side by side
    profile.py           where the CPU goes in a handoff (py-spy)
    demo_latency.py      the embedded default's voice-to-voice
"""
