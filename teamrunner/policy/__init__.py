"""A remote policy: the team's own HTTP service deciding what happens between turns.

``client.py`` speaks its wire contract (fail-safe: a failed request is a
``stay``); ``control.py`` is what a call does with each answer (prompts and
tools, ``say``, handoffs, the end). What a request's ``remote_policy`` field
resolves to is the plan's (``plan.remote_policy``).

::

    client.py   the service's wire contract: ``/session`` and ``/tool-call``
    control.py  what a call does with each answer
"""
