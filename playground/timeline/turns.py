"""Cutting a call's moments into turns, and measuring each step of a turn.

``cut`` takes what ``recorder.CallTimeline`` noted and returns the call's
turns: the opening (the greeting), one turn per time the caller speaks
(from the caller's first word to the next time the caller speaks), and a
turn of the team's own when it speaks up after a silence (an idle nudge).
Each turn is drawn as bars and ticks on lanes (``Bar``, ``Tick``), with its
steps listed with their latencies (``Step``) and two measures marked: the
voice-to-voice time (the caller's last word to the first bot audio the
caller hears) and the handoff gap (the end of the handoff line, as heard, to
the next member's first audio). Pure data in, data out: no pipecat here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from playground.timeline.recorder import Moment
from teamrunner.plan import CallPlan

# A turn is drawn until this long after its last step (what is heard after it is cut off).
FOCUS_AFTER_SECS = 1.0
# The team speaks up by itself when it starts this long after the caller last heard it.
TEAM_TURN_AFTER_SECS = 1.0

CALLER, STT, TOOLS, TTS, HEARD = "Caller", "STT", "Tools", "Voice (TTS)", "Caller hears"


def llm_lane(member: str) -> str:
    return f"LLM · {member}"


@dataclass
class Bar:
    """A stretch of time on a lane (``tone`` picks its colour: a member's index, or a kind)."""

    lane: str
    start: float
    end: float
    label: str
    tip: str
    tone: str


@dataclass
class Tick:
    """A moment on a lane."""

    lane: str
    at: float
    label: str
    tip: str
    tone: str


@dataclass
class Measure:
    """A span that matters to the caller, marked across the lanes."""

    name: str  # "voice-to-voice" or "handoff gap"
    start: float
    end: float

    @property
    def ms(self) -> int:
        return round((self.end - self.start) * 1000)


@dataclass
class Step:
    """One step of a turn: when it happened and how long it took since what it waited for."""

    what: str
    at: float
    latency_ms: int | None = None
    since: str = ""


@dataclass
class Turn:
    """One turn of the call."""

    index: int
    opener: str  # "opening", "caller" or "team"
    start: float
    end: float = 0.0
    moments: list[Moment] = field(default_factory=list)
    said: str = ""  # what the caller said (the transcripts), or the team's first line
    bars: list[Bar] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    measures: list[Measure] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    handoff: str | None = None
    # Where the voice-to-voice time went: each stage, and its ms.
    breakdown: list[tuple[str, int]] = field(default_factory=list)

    @property
    def focus_end(self) -> float:
        """Where the turn's steps are over: only the caller's listening goes on after it."""
        busy = [m.at for m in self.moments if m.kind != "heard"]
        busy += [m.end for m in self.measures] + [m.at for m in self.moments if m.kind == "heard"]
        return min(self.end, max(busy, default=self.start) + FOCUS_AFTER_SECS)

    @property
    def title(self) -> str:
        if self.opener == "opening":
            return "Opening"
        if self.opener == "team":
            return "The team speaks up"
        return "Caller"

    def measure(self, name: str) -> Measure | None:
        return next((m for m in self.measures if m.name == name), None)

    def to_json(self) -> dict[str, Any]:
        v2v, gap = self.measure("voice-to-voice"), self.measure("handoff gap")
        return {
            "index": self.index,
            "opener": self.opener,
            "said": self.said,
            "start": round(self.start, 3),
            "end": round(self.end, 3),
            "handoff": self.handoff,
            "voice_to_voice_ms": v2v.ms if v2v else None,
            "handoff_gap_ms": gap.ms if gap else None,
            "breakdown": [{"stage": stage, "ms": ms} for stage, ms in self.breakdown],
            "heard": [
                {"what": b.label, "start": round(b.start, 3), "end": round(b.end, 3)}
                for b in self.bars
                if b.lane == HEARD
            ],
            "steps": [
                {"what": s.what, "at": round(s.at, 3), "latency_ms": s.latency_ms, "since": s.since}
                for s in self.steps
            ],
        }


def cut(moments: Sequence[Moment], plan: CallPlan) -> list[Turn]:
    """The call's turns, from its moments, its members named as in ``plan``."""
    members = list(plan.members)

    def name(member_id: str) -> str:
        member = plan.members.get(member_id)
        return member.name if member is not None and member.name else member_id

    def tone(member_id: str) -> str:
        """A member's colour, the same in every turn."""
        index = members.index(member_id) if member_id in members else len(members)
        return f"m{index % 4}"

    ordered = sorted(moments, key=lambda m: m.at)
    if not ordered:
        return []
    turns = [Turn(0, "opening", ordered[0].at)]
    # A call with no caller audio (a text session) has no VAD: each message is a turn.
    text = not any(m.kind == "caller-start" for m in ordered)
    for moment in ordered:
        turn = turns[-1]
        caller = "transcript" if text else "caller-start"
        if moment.kind == caller and (text or _caller_done(turn)):
            turns.append(Turn(len(turns), "caller", moment.at))
        elif moment.kind in ("line", "llm-request") and _team_speaks_up(turn, moment.at):
            turns.append(Turn(len(turns), "team", moment.at))
        turns[-1].moments.append(moment)
    for turn, following in zip(turns, [*turns[1:], None], strict=True):
        turn.end = following.start if following else max(_ends(turn.moments))
        _draw(turn, name, tone)
    return turns


def _caller_done(turn: Turn) -> bool:
    """Whether the caller's turn (if it is one) has ended, so new speech starts another."""
    return turn.opener != "caller" or any(m.kind == "turn-end" for m in turn.moments)


def _team_speaks_up(turn: Turn, at: float) -> bool:
    heard = [m.data["end"] for m in turn.moments if m.kind == "heard"]
    if not heard or any(m.kind == "caller-start" for m in turn.moments if m.at > max(heard)):
        return False
    return at - max(heard) > TEAM_TURN_AFTER_SECS


def _ends(moments: Sequence[Moment]) -> list[float]:
    return [m.data.get("end", m.at) for m in moments]


def _ms(secs: float) -> int:
    return round(secs * 1000)


def _draw(turn: Turn, name: Callable[[str], str], tone: Callable[[str], str]) -> None:
    """Fill in ``turn``'s bars, ticks, steps and measures from its moments."""
    moments = turn.moments
    caller_stop: Moment | None = None
    speech: Moment | None = None
    request: Moment | None = None
    calls: dict[str, Moment] = {}
    tts: Moment | None = None
    transcripts: list[str] = []
    handoff_heard: Moment | None = None
    handoff_line: Moment | None = None
    for m in moments:
        who = name(m.member)
        if m.kind == "caller-start":
            speech = m
        elif m.kind == "caller-stop":
            caller_stop = m
            start = speech.at if speech else m.at
            turn.bars.append(
                Bar(CALLER, start, m.at, "speaks", f"caller speaks {_span(start, m.at)}", "caller")
            )
            vad = _ms(m.data["vad"] - m.at)
            turn.steps.append(Step("caller stops speaking", m.at))
            turn.ticks.append(
                Tick(CALLER, m.data["vad"], "VAD", f"the VAD is sure after {vad} ms", "mark")
            )
            speech = None
        elif m.kind == "barge-in":
            turn.steps.append(Step("the bot is cut off", m.at))
            turn.ticks.append(
                Tick(HEARD, m.at, "cut off", "an interruption drops what was not yet heard", "cut")
            )
        elif m.kind == "turn-end":
            latency = _ms(m.at - caller_stop.at) if caller_stop else None
            turn.steps.append(Step("end of turn", m.at, latency, "the caller's last word"))
            turn.ticks.append(
                Tick(CALLER, m.at, "end of turn", f"end of turn: +{latency} ms", "turn")
            )
        elif m.kind == "transcript":
            transcripts.append(m.text)
            latency = _ms(m.at - caller_stop.at) if caller_stop else None
            turn.steps.append(
                Step(f"transcript “{m.text}”", m.at, latency, "the caller's last word")
            )
            turn.ticks.append(Tick(STT, m.at, m.text, f"“{m.text}” +{latency} ms", "stt"))
        elif m.kind == "llm-request":
            _close_request(turn, request, m.at, name)
            request = m
            # pipecat pushes the end of the caller's turn just after the request it makes.
            ended = _last(moments, m, ("turn-end",), slack=0.05)
            result = _last(moments, m, ("function-result",))
            after = max((e for e in (ended, result) if e), key=lambda e: e.at, default=None)
            latency = max(0, _ms(m.at - after.at)) if after else None
            turn.steps.append(
                Step(f"LLM request ({who})", m.at, latency, _since_label(after) if after else "")
            )
        elif m.kind == "llm-first-byte" and request is not None:
            latency = _ms(m.at - request.at)
            turn.steps.append(Step(f"LLM first byte ({who})", m.at, latency, "the request"))
            turn.ticks.append(
                Tick(
                    llm_lane(name(request.member)),
                    m.at,
                    "1st byte",
                    f"first byte +{latency} ms",
                    "mark",
                )
            )
        elif m.kind == "llm-end" and request is not None:
            turn.steps.append(Step(f"LLM end ({who})", m.at, _ms(m.at - request.at), "the request"))
            _close_request(turn, request, m.at, name, m.text)
            request = None
        elif m.kind == "function-call":
            calls[m.data["id"]] = m
        elif m.kind == "function-result":
            call = calls.pop(m.data["id"], None)
            start = call.at if call else m.at
            args = call.data.get("arguments") if call else None
            rtt = _ms(m.at - start)
            transition = bool(call and call.data.get("transition"))
            turn.steps.append(Step(f"{m.text}() returned", m.at, rtt, "the call"))
            turn.bars.append(
                Bar(
                    TOOLS,
                    start,
                    m.at,
                    m.text,
                    f"{m.text}({_short(args)}) → {_short(m.data.get('result'))}: "
                    f"{rtt} ms round trip",
                    "handoff" if transition else "tool",
                )
            )
        elif m.kind == "handoff":
            text = f"{name(m.data['from'])} → {name(m.data['to'])}"
            turn.handoff = text
            turn.steps.append(Step(f"handoff {text} ({m.text})", m.at))
            turn.ticks.append(Tick("*", m.at, f"handoff {text}", f"{m.text}: {text}", "handoff"))
        elif m.kind in ("line", "handoff-line"):
            kind = "handoff line" if m.kind == "handoff-line" else "line"
            turn.steps.append(Step(f"{kind} “{m.text}”", m.at))
            if m.kind == "handoff-line":
                handoff_line = m
            if not turn.said and turn.opener != "caller":
                turn.said = m.text
        elif m.kind == "tts-start":
            tts = m
        elif m.kind == "tts-first-audio" and tts is not None:
            latency = _ms(m.at - tts.at)
            turn.steps.append(Step(f"TTS first audio ({who})", m.at, latency, "the TTS start"))
            turn.ticks.append(Tick(TTS, m.at, "1st audio", f"first audio +{latency} ms", "mark"))
        elif m.kind == "tts-stop" and tts is not None:
            turn.bars.append(
                Bar(
                    TTS,
                    tts.at,
                    m.at,
                    who,
                    f"{who}'s voice synthesizes {_span(tts.at, m.at)}",
                    tone(m.member),
                )
            )
            tts = None
        elif m.kind == "heard":
            end = m.data["end"]
            spoken = _last(moments, m, ("tts-start",))
            words = spoken.text if spoken is not None else ""
            label = f"{who}: {words}" if words else who
            turn.steps.append(Step(f"the caller hears {who}", m.at, None))
            turn.bars.append(
                Bar(HEARD, m.at, end, label, f"{label} {_span(m.at, end)}", tone(m.member))
            )
            if handoff_heard is not None and m.member != handoff_heard.member:
                turn.measures.append(Measure("handoff gap", handoff_heard.data["end"], m.at))
                handoff_heard = None
            if handoff_line is not None and _voice_of(moments, m) == "handoff":
                handoff_heard, handoff_line = m, None
    if tts is not None:
        turn.bars.append(Bar(TTS, tts.at, turn.end, name(tts.member), "cut off", tone(tts.member)))
    _close_request(turn, request, turn.end, name)
    if turn.opener == "caller":
        turn.said = " ".join(transcripts)
        if caller_stop is not None:
            stopped = caller_stop.at
            heard = next((m for m in moments if m.kind == "heard" and m.at >= stopped), None)
            if heard is not None:
                turn.measures.insert(0, Measure("voice-to-voice", stopped, heard.at))
                turn.breakdown = _breakdown(moments, caller_stop, heard)
    for measure in turn.measures:
        turn.steps.append(Step(measure.name, measure.end, measure.ms))
    turn.steps.sort(key=lambda s: s.at)


def _breakdown(moments: Sequence[Moment], stop: Moment, heard: Moment) -> list[tuple[str, int]]:
    """The voice-to-voice time from ``stop`` to ``heard``, cut at each step on the way.

    Each stage is named by what the caller waited for; a step that did not happen,
    or happened out of order, leaves its wait to the next stage.
    """
    after = [m for m in moments if stop.at <= m.at <= heard.at]
    turn_end = next((m.at for m in after if m.kind == "turn-end"), None)

    def first(kinds: tuple[str, ...], since: float | None) -> float | None:
        if since is None:
            return None
        return next((m.at for m in after if m.kind in kinds and m.at >= since), None)

    said = [m.at for m in after if m.kind == "transcript" and turn_end and m.at <= turn_end]
    answered = first(("llm-first-byte", "function-result"), turn_end)
    points = [
        ("VAD stop wait", stop.data.get("vad")),
        ("STT", said[-1] if said else None),
        ("end of turn", turn_end),
        ("LLM", answered),
        ("TTS", first(("tts-first-audio",), answered or turn_end)),
        ("playout", heard.at),
    ]
    stages: list[tuple[str, int]] = []
    last = stop.at
    for stage, at in points:
        if at is not None and at >= last:
            stages.append((stage, _ms(at - last)))
            last = at
    return stages


def _close_request(
    turn: Turn, request: Moment | None, end: float, name: Callable[[str], str], text: str = ""
) -> None:
    if request is None:
        return
    who = name(request.member)
    wrote = f": “{text}”" if text else ""
    tip = f"{who}'s LLM {_span(request.at, end)}{wrote}"
    turn.bars.append(Bar(llm_lane(who), request.at, end, text or "LLM", tip, "llm"))


def _voice_of(moments: Sequence[Moment], heard: Moment) -> str:
    """Whether the stretch of speech ``heard`` belongs to was a handoff line."""
    start = _last(moments, heard, ("tts-start",))
    return "handoff" if start is not None and start.data.get("handoff") else "reply"


def _last(
    moments: Sequence[Moment], before: Moment, kinds: tuple[str, ...], slack: float = 0.0
) -> Moment | None:
    """The last moment of ``kinds`` at or before ``before`` (``moments`` are in time order).

    ``slack`` also takes one up to that long after it.
    """
    found = None
    for m in moments:
        if m.at > before.at + slack:
            break
        if m.kind in kinds and m is not before:
            found = m
    return found


def _since_label(moment: Moment) -> str:
    return "the end of turn" if moment.kind == "turn-end" else f"{moment.text}()'s result"


def _span(start: float, end: float) -> str:
    return f"for {_ms(end - start)} ms"


def _short(value: Any, limit: int = 80) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
