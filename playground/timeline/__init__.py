"""See a call: its turns on a time axis, as one self-contained HTML page.

``CallTimeline`` (``recorder.py``) is a pipecat observer: hand it to the call
(``run.build_call(..., observers=[timeline])``), and once the call is over
``timeline.write(path, title=...)`` writes the page. ``turns.py`` cuts the
recorded moments into turns and measures them; ``page.py`` draws them with
inline CSS and SVG, and loads nothing from anywhere.
"""

from playground.timeline.recorder import CallTimeline

__all__ = ["CallTimeline"]
