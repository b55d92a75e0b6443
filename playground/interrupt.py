"""Ctrl-C for the commands that run a call: the first hangs up, the second quits at once.

``teamrunner call`` and ``teamrunner demo`` run a whole call, simulators and
runner included, in one event loop. While ``Interrupt`` is active, the first
SIGINT sets its ``hangup`` event: ``run_team`` ends the call where it is and
writes what it recorded so far, and the command exits with status 130
(128 + SIGINT, what a shell reports for Ctrl-C). A second SIGINT, while that
is still going on, ends the process there and then with the same status:
everything the command started lives inside this one process, so nothing is
left running.

Once an interrupted call is written, ``quit_now`` ends the process without
Python's finalization: that is a full garbage collection of every loaded
model and module, about a second here, with nothing left to do for us.

It replaces asyncio's own SIGINT handling (cancel the main task, then raise
``KeyboardInterrupt``) for as long as it is active, because a cancelled call
would lose what it recorded. Nothing here knows what a call is.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import NoReturn, Self

EXIT_STATUS = 128 + signal.SIGINT


class Interrupt:
    """SIGINT handling for the running event loop; use as ``with Interrupt() as interrupt:``."""

    def __init__(
        self,
        notice: str = "interrupted: hanging up and writing what was recorded "
        "(Ctrl-C again to quit at once)",
    ) -> None:
        """``notice`` is printed at the first SIGINT."""
        self.hangup = asyncio.Event()
        self._notice = notice
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def interrupted(self) -> bool:
        return self.hangup.is_set()

    def __enter__(self) -> Self:
        self._loop = asyncio.get_running_loop()
        self._loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.remove_signal_handler(signal.SIGINT)
            self._loop = None

    def _on_sigint(self) -> None:
        if not self.hangup.is_set():
            print("\n" + self._notice, file=sys.stderr, flush=True)
            self.hangup.set()
            return
        print("interrupted again: quitting without writing", file=sys.stderr, flush=True)
        # Not sys.exit: that would unwind through the very clean-up being cut short.
        quit_now(EXIT_STATUS)


def quit_now(status: int) -> NoReturn:
    """End the process with ``status`` at once, once what it printed is flushed."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)
