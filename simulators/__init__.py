"""Local stand-ins for the parties the runner talks to, each speaking its real protocol.

Every simulator is a real server on 127.0.0.1 (an ephemeral port unless told
otherwise), usable from tests with ``async with`` and from the command line
with ``python -m simulators <name>``. They are simulators, not the real
services: replies are scripted, voices are tones, transcripts come from a
script. Nothing here is used by the runner itself.
"""
