"""Serving the HTTP API: uvicorn with the limits, timeouts and drain an operator needs.

``limits.py`` bounds what a request may cost before the application sees it
(body size, body read time); ``protocol.py`` bounds how long a client may
take to send its headers; ``server.py`` is uvicorn's server with a signal
turning into a drain instead of an immediate close, and the one place the
uvicorn configuration is made from the runner's settings. Nothing here knows
about calls: the application hands the server what to do on a drain.
"""
