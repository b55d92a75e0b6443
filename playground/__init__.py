"""Running teams by hand on one machine: the ``teamrunner`` command and what it drives.

The layer above the runner and the simulators. ``cli.py`` is the command
(``teamrunner demo | call | check``), ``teamfile.py`` reads and checks team
files, ``team_call.py`` runs one against the simulators with a scripted
caller, ``transcript.py`` follows it from pipecat-manager's side of the wire,
and ``server.py`` serves the runner's HTTP API inside the same event loop.
Nothing in the runner imports this package, and the production image leaves
it out together with the simulators.
"""
