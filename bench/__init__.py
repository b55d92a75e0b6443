"""Benchmarks: what routing costs, how fast a handoff is, how many calls a core carries.

Each module runs with one command (``python -m bench.<name>``) from a clean
checkout, prints a table, and measures against a baseline taken in the same
run. The runner is a process of its own, as deployed; the simulators run in
the benchmark's process with zero provider latency, so what is measured is
the runner's own cost. Results and the commands that produced them are
recorded in ``BENCHMARKS.md``.
"""
