"""A call's transcript, read off pipecat-manager's side of the wire.

``Transcript`` follows the events the pipecat-manager simulator records for
one call and turns them into lines: who said what, which member spoke, the
switches and tool calls, and how long the caller waited for the first bot
audio of each reply. What it shows is what the Go side would have seen.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from playground.teamfile import TeamFile
from simulators.manager import CallRecord


@dataclass
class Line:
    """One line of the call's transcript."""

    at: float
    kind: str  # caller, bot, switch, tool, note
    text: str
    member: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class CallReport:
    """What happened on the call, as written to the JSON transcript."""

    team: str
    call_id: str
    llm: str
    startup_secs: float | None  # None: the call never came up
    # Ended by the user (Ctrl-C) before the caller had said everything.
    interrupted: bool = False
    # Why the call ended (the runner's end reason), and how, if its remote policy said.
    ended: str | None = None
    disposition: str | None = None
    lines: list[Line] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    wav: str | None = None
    transcript: str | None = None
    timeline: str | None = None  # the HTML timeline

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Transcript:
    """Follows a call's events on pipecat-manager's side and turns them into lines."""

    def __init__(self, call: CallRecord, team: TeamFile, echo: Callable[[str], None]) -> None:
        self._call = call
        self.echo = echo
        self._names = team.member_names()
        self._voices = {
            m.id: f"{m.ai.tts_type or team.call.tts_type} {m.ai.tts_voice_id or ''}".strip()
            for m in team.team.members
        }
        self.member = team.team.start_member_id
        self.origin = time.monotonic()
        self.lines: list[Line] = []
        self.latencies: list[float] = []
        self.startup_secs: float | None = None
        self.ended: str | None = None
        self.disposition: str | None = None
        self._seen = 0
        self._text = ""
        self._awaiting_reply_since: float | None = None

    def note(self, text: str) -> None:
        self._add(Line(self._now(), "note", text))

    def call_up(self, startup_secs: float) -> None:
        """``POST /run`` answered 200 after ``startup_secs``."""
        self.startup_secs = round(startup_secs, 3)
        self.note(f"call up in {startup_secs:.2f} s (POST /run answered 200)")

    def call_ended(self, reason: str | None, disposition: str | None) -> None:
        """The runner's call ended, for ``reason``; a remote policy's disposition is shown."""
        self.ended, self.disposition = reason, disposition
        if disposition is not None:
            self.note(f"the remote policy ended the call: disposition {disposition}")

    def caller_spoke(self, ended_at: float) -> None:
        """The caller finished a line: the next bot audio measures the wait."""
        self._awaiting_reply_since = ended_at

    async def follow(self) -> None:
        """Turn events into lines until the call closes."""
        call = self._call
        while True:
            await call.wait(lambda c: len(c.events) > self._seen or c.closed, timeout=3600)
            for event in call.events[self._seen :]:
                self._on_event(event)
            self._seen = len(call.events)
            if call.closed:
                return

    def _on_event(self, event: Any) -> None:
        kind = type(event).__name__
        if kind == "RTVIMessage":
            self._on_rtvi(event)
        elif kind == "MemberSwitch":
            old, new = event.from_member.get("id"), event.to_member.get("id")
            self.member = new
            text = f"{self._names.get(old, old)} -> {self._names.get(new, new)}"
            self._add(Line(self._at(event), "switch", f"{text} ({event.transition_function_name})"))
        elif kind == "ToolCall":
            detail = {"arguments": event.arguments, "status": event.reply_status}
            self._add(
                Line(
                    self._at(event),
                    "tool",
                    f"{event.name} -> HTTP {event.reply_status}",
                    member=self._names.get(self.member),
                    detail=detail,
                )
            )
        elif kind == "AudioChunk" and self._awaiting_reply_since is not None:
            latency = event.at - self._awaiting_reply_since
            self._awaiting_reply_since = None
            self.latencies.append(latency)
            self._add(
                Line(
                    self._at(event),
                    "note",
                    f"first bot audio {latency:.2f} s after the caller stopped",
                )
            )

    def _on_rtvi(self, message: Any) -> None:
        data = message.data if isinstance(message.data, dict) else {}
        if message.type == "user-transcription" and data.get("final"):
            self._caller_said(self._at(message), str(data.get("text", "")).strip())
        elif message.type == "bot-llm-text":
            self._text += str(data.get("text", ""))
        elif message.type == "bot-llm-stopped":
            if self._text.strip():
                self._add(
                    Line(
                        self._at(message),
                        "bot",
                        self._text.strip(),
                        member=self._names.get(self.member),
                        detail={"voice": self._voices.get(self.member, "")},
                    )
                )
            self._text = ""

    def _caller_said(self, at: float, text: str) -> None:
        """One line per caller turn, as the LLM hears it.

        A recogniser that starts on each stop of the VAD sends a final
        transcript for each part of a line with a pause in it.
        """
        last = self.lines[-1] if self.lines else None
        if last is not None and last.kind == "caller":
            last.text = f"{last.text} {text}"
            self.echo(_format(Line(at, "caller", f"... {text}")))
            return
        self._add(Line(at, "caller", text))

    def _add(self, line: Line) -> None:
        self.lines.append(line)
        self.echo(_format(line))

    def _at(self, event: Any) -> float:
        return round(event.at - self.origin, 2)

    def _now(self) -> float:
        return round(time.monotonic() - self.origin, 2)


def _format(line: Line) -> str:
    stamp = f"[{line.at:6.2f}s]"
    if line.kind == "caller":
        return f'{stamp} caller         : "{line.text}"'
    if line.kind == "bot":
        who = f"{line.member} ({line.detail.get('voice', '')})"
        return f'{stamp} {who:<15}: "{line.text}"'
    if line.kind == "switch":
        return f"{stamp} ** switch     : {line.text}"
    if line.kind == "tool":
        return f"{stamp} ** tool       : {line.text} {json.dumps(line.detail.get('arguments'))}"
    return f"{stamp}    {line.text}"
