"""Local stand-ins for the parties the runner talks to, each speaking its real protocol.

Every simulator is a real server on 127.0.0.1 (an ephemeral port unless told
otherwise), usable from tests with ``async with`` and from the command line
with ``python -m simulators.<name>``. They are simulators, not the real
services: replies are scripted, voices are tones, transcripts come from a
script. Nothing here is used by the runner itself.

::

    cloud.py       every party at once: pipecat-manager and the providers
    server.py      what every simulator is: a real aiohttp server on loopback
    manager.py     pipecat-manager's wire: its websockets and HTTP endpoints
    line.py        the live side of one call: its two websockets
    caller.py      what the caller plays on the input socket, and at what pace
    wire.py        the bytes on pipecat-manager's websockets
    endpoints.py   pipecat-manager's HTTP endpoints: tools, member switches
    events.py      what can happen on a call, as typed events
    record.py      what happened on one call (``CallRecord``), and waits on it
    openai.py      an OpenAI-compatible chat-completions endpoint, scripted
    brain.py       a stand-in LLM that follows keywords, for a team with no model
    deepgram.py    Deepgram live speech-to-text, scripted transcripts
    cartesia.py    Cartesia text-to-speech: tone voices
    elevenlabs.py  ElevenLabs multi-context text-to-speech: tone voices
    tts.py         what the voice simulators share: tones, pacing, requests
    voices.py      a pure tone per voice id, recognisable again
    speech.py      real speech for the caller, from Piper
    audio.py       PCM helpers: samples to and from the wire encodings
    wav.py         WAV files in, recorded calls out
    policy.py      a remote policy service that answers as scripted
    tls.py         certificates for the providers' simulators to speak TLS
"""
