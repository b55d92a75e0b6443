"""Turn-taking and the speech models behind it, shared by every call of a process.

::

    turn_taking.py  the turn parameters of a call: VAD, smart-turn or the fixed rule
    end_of_turn.py  the fixed end-of-turn rule, its grace timed in the caller's audio
    models.py       speech models (Silero, smart-turn, Whisper, Piper) loaded once per process
    analyzers.py    pipecat's VAD and smart-turn analyzers on those shared models
"""
