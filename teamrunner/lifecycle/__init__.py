"""A call's life in a runner process: admitted, started, run, ended, and the process's own.

``registry.SessionRegistry`` is the process's calls by id: it admits a call
(``admission``), starts it as a ``session.Session`` with the call builder it
was handed from above (``main.build_call``, which is ``run.build_call`` over
pipecat-manager's sockets; nothing here imports either), stops and drains.
``runtime`` is what every call of the process shares, and ``warmup`` gets
the process ready for its first call.

::

    registry.py   the running calls: admission, stop, drain
    session.py    one running call, from start to released
    admission.py  whether the process can carry one more call, from its load
    runtime.py    what every call of the process shares
    warmup.py     importing the call stack and loading models in the background
    proxies.py    the proxy settings, read from the environment once
"""
