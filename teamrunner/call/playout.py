"""When the caller hears the bot: the media server's playout, as a clock.

Bot audio leaves for pipecat-manager unpaced (``manager/transport.py``), and
the media server plays it back to back at real time from its arrival, so
what the caller has heard at any moment lags far behind what was sent.
``PlayoutClock`` keeps that timeline; a barge-in (when ``FLUSH_MEDIA`` drops
what the media server had queued) cuts it. ``lines.Lines`` feeds one with
the audio the output transport wrote, to know when a line has been heard
(and ``idle.IdleNudges`` reads it: idle time starts when the caller has
heard the bot's last word); ``heard.py`` keeps one for words, before the
output transport.
"""

from __future__ import annotations


class PlayoutClock:
    """The media server's playout of bot audio: back to back, at real time, from arrival.

    Times are seconds on the pipeline's clock.
    """

    def __init__(self) -> None:
        self._end = 0.0

    @property
    def ends_at(self) -> float:
        """When everything sent so far will have been played."""
        return self._end

    def add(self, secs: float, now: float) -> tuple[float, float]:
        """Audio of ``secs`` arrives ``now``; returns when it starts and ends playing."""
        start = max(now, self._end)
        self._end = start + secs
        return start, self._end

    def flush(self, now: float) -> None:
        """A barge-in: whatever had not been played is dropped."""
        self._end = min(self._end, now)
