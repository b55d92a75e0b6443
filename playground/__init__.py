"""Running teams by hand on one machine: the ``teamrunner`` command and what it drives.

The layer above the runner and the simulators. ``cli.py`` is the command
(``teamrunner demo | call | check | eval | eval-bot``). Team files are read strictly by
``teamfile.py`` (keys checked by ``schema.py``, lines found by
``source.py``), checked by ``checks.py`` and drawn by ``graph.py``.
``team_call.py`` runs one against the simulators with a scripted caller,
``transcript.py`` follows it from pipecat-manager's side of the wire,
``server.py`` serves the runner's HTTP API inside the same event loop, and
``interrupt.py`` is what Ctrl-C does to a running call. ``evals.py`` is
``teamrunner eval | eval-bot``: ``eval_bot.py`` serves a team's real calls to
pipecat's eval harness over ``eval_transport.py``, ``eval_services.py`` gives its
judge a key, and ``scenarios/`` holds example scenario files. Nothing in the
runner imports this package, and the production image leaves it out
together with the simulators.
"""
