"""What a call does while it runs, beyond its providers: pipecat processors and helpers.

A call's pipeline is assembled by ``run.py``; the pieces here are the
behaviour it is assembled from. None knows how it is wired in or imports the
lifecycle: each gets what it needs when it is made.

::

    rtvi.py           the RTVI messages a call sends the other end of its transport
    lines.py          lines the runner says itself (greetings, handoff lines, nudges, goodbyes)
    playout.py        when the caller hears the bot: the media server's playout, mirrored
    heard.py          what the caller heard of an interrupted reply
    fallback.py       a spoken line in place of a failed LLM
    ending.py         ending a call from inside, once its last line was heard
    idle.py           nudging a quiet caller, hanging up on one who stays quiet
    activity.py       how long a call has been idle (the session idle timeout)
    voice_watch.py    noticing a voice that stops producing audio
    observer.py       reading a call's frames into its journal, activity and voice watches
    caller_audio.py   where caller audio stops travelling down the pipeline
    carryover.py      what the next member's LLM sees after a transition
    functions.py      the one way a function is offered to a member's LLM (a flows schema)
    tool_batch.py     a response's function calls as one batch (a transition waits for its tools)
    cut_off_calls.py  function calls the caller cut off, settled in order
"""
