"""Running teams by hand on one machine: the ``teamrunner`` command and what it drives.

The layer above the runner and the simulators. ``cli.py`` is the command
(``teamrunner demo | call | check | eval | eval-bot | talk``). Team files are read strictly by
``teamfile.py`` (keys checked by ``schema.py``, lines found by
``source.py``), checked by ``checks.py`` and drawn by ``graph.py``.
``team_call.py`` runs one against the simulators with a scripted caller,
``transcript.py`` follows it from pipecat-manager's side of the wire,
``server.py`` serves the runner's HTTP API inside the same event loop,
``policy_service.py`` runs the example remote policy service for a call, and
``interrupt.py`` is what Ctrl-C does to a running call. ``evals.py`` is
``teamrunner eval | eval-bot``: ``eval_bot.py`` serves a team's real calls to
pipecat's eval harness over ``eval_transport.py``, ``eval_services.py`` gives its
judge a key, and ``scenarios/`` holds example scenario files. ``talk.py`` serves a
team to a browser (``talk.html``) over pipecat's SmallWebRTC transport, the call's
transport being ``browser_peer.py``, with ``talk_events.py`` telling the page who
said what. ``timeline/`` draws a call as an HTML timeline, ``watch.py`` gives a designer's call its
timeline and Whisker's observer, and ``whisker.py``
serves a call to pipecat's Whisker debugger. Nothing in the runner imports this
package, and the production image leaves it out together with the simulators.
"""
