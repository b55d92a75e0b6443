"""The runner's library: everything a call is made of, below the HTTP app and the call builder.

It never imports the top-level modules (``main``, ``run``, ``team_flow``,
``routing``) nor the simulators; they import it. See the README's layer
drawing for what lives where.
"""
