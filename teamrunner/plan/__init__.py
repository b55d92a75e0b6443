"""From a ``/run`` request to a call plan: every decision about a call, made before it starts.

``plan_call`` (``planner.py``) checks the whole request and reports every
problem at once (``InvalidRequest``), then resolves what the pipeline builder
needs: which provider, model, voice and language each member uses, which key
(the request's, else the runner's environment) and which endpoint
(``specs.py``), the functions with names every provider accepts
(``functions.py``), the prompts with their placeholders filled
(``placeholders.py``), the words the runner says itself (greetings, handoff
lines, nudges, goodbyes: ``spoken.py``), the remote policy's address
(``remote_policy.py``), the turn-taking settings, and the conversation
history made valid for an LLM (``history.py``). The plan itself is plain
frozen data (``model.py``); the builder takes it as given and decides
nothing of this again.

::

    planner.py        ``plan_call``: the whole request checked, then the plan made
    model.py          the plan: plain frozen data
    specs.py          provider, model, voice, key and endpoint of each member
    functions.py      Go's tools and the team's transitions, named for every provider
    placeholders.py   ``{{ key }}`` in prompts, filled once
    spoken.py         the words the runner says itself
    remote_policy.py  the remote policy's address, config, token and timeout
    history.py        the conversation so far, valid for every provider

Nothing in a plan's ``repr`` shows a key, and no problem message quotes a
request's value: messages name the field and say what it should hold.
"""

from teamrunner.plan.functions import function_name
from teamrunner.plan.model import (
    END_CALL_FUNCTION,
    SINGLE_MEMBER_ID,
    CallPlan,
    EndCallPlan,
    IdlePlan,
    MemberPlan,
    PolicyPlan,
    ToolPlan,
    TransitionPlan,
    TurnPlan,
)
from teamrunner.plan.planner import plan_call

__all__ = [
    "END_CALL_FUNCTION",
    "SINGLE_MEMBER_ID",
    "CallPlan",
    "EndCallPlan",
    "IdlePlan",
    "MemberPlan",
    "PolicyPlan",
    "ToolPlan",
    "TransitionPlan",
    "TurnPlan",
    "function_name",
    "plan_call",
]
