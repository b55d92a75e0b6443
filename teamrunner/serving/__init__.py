"""Serving the HTTP API: uvicorn with the limits, timeouts and drain an operator needs.

``edge.py`` installs, the same on every application, what a request passes
before a route sees it: ``answers.py``, the one error shape every refusal
and every bug is answered in, on a connection that stays open;
``limits.py``, what a body may cost (its size, its time to arrive); and
``json_body.py``, the one bounded parser a JSON body is read with.
``protocol.py`` bounds how long a client may take to send its headers;
``server.py`` is uvicorn's server with a signal turning into a drain instead
of an immediate close, and the one place the uvicorn configuration is made
from the runner's settings. Nothing here knows about calls: the application
hands the server what to do on a drain.

::

    server.py     uvicorn's server: a signal drains, the configuration from the settings
    edge.py       what every request passes before a route, the same on every app
    answers.py    the one error shape every refusal is answered in
    limits.py     a body's size and the time it may take to arrive
    json_body.py  the one bounded JSON parser
    protocol.py   a deadline on a request's headers
    access.py     the Host names the API answers to, and its optional token
    listeners.py  where the runner listens: the API's address, and the probes'
"""
