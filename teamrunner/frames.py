"""The frames the runner adds to pipecat's, in one place every layer can import.

Each is a plain pipecat frame with a meaning of the runner's own; what acts
on it lives with the behaviour (named in each docstring). Nothing here holds
a processor or any logic.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pipecat.frames.frames import ControlFrame, DataFrame, SystemFrame


class NoWordsFrame(SystemFrame):
    """A recogniser transcribed a stretch of caller audio and found no words in it.

    pipecat sends no transcript then, so without this the end-of-turn rule
    (``speech.end_of_turn``) could not tell a stretch with no words from one
    whose transcript is late, and would wait out the STT's p99 latency either
    way. A system frame, so that an interruption cannot drop it. The embedded
    Whisper sends it (``providers.whisper``).
    """


@dataclass
class StretchVerdictFrame(SystemFrame):
    """The end-of-turn rule's word, sent upstream, on the caller's last stretch of speech.

    A stretch runs from a VAD start to its stop. ``joined`` is True when the
    caller spoke again inside the rule's grace, so the stretch and the next
    are one turn's words and should be recognised together; False when the
    grace passed in silence (or no stretch was waiting). The rule
    (``speech.end_of_turn``) sends one at every VAD start and at the end of
    every grace; a segmented recogniser holds each stretch's transcript for it
    (``pipecat_internals.segments``).
    """

    joined: bool


@dataclass
class SpokenLineFrame(DataFrame):
    """A line the runner says (``call.lines``), for pipecat-manager's transcript only."""

    text: str


@dataclass
class LinePlayedFrame(ControlFrame):
    """Follows a line; resolved once the caller has heard everything said before it.

    A voice holds it behind the audio it is still making, and ``call.playout``
    resolves it when the media server will have played that audio.
    """

    played: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass
class MemberReadyFrame(ControlFrame):
    """Queued behind a member's prompt and tools: the member can answer now (``routing.llm``)."""
