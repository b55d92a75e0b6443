"""Drawing a call's turns as one self-contained HTML page: inline CSS and SVG, nothing fetched.

``page`` returns the whole document: a header with the call's figures, a
strip of the whole call (one block per turn, each a link to its card), and
a card per turn with its lanes (the caller, the STT, each member's LLM, the
tools, the voice, and what the caller hears) on a time axis, the
voice-to-voice time and the handoff gap marked across them, and its steps
with their latencies in a table. Every bar and tick has a tooltip with the
exact times (SVG ``<title>``). The turns are also embedded as JSON (``<script
type="application/json" id="timeline-data">``) for tools and tests; the page
itself runs no script and loads nothing from anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from html import escape

from playground.timeline.turns import CALLER, HEARD, STT, TOOLS, TTS, Bar, Tick, Turn, llm_lane
from teamrunner.plan import CallPlan

WIDTH = 1100
LABEL_W = 150
LANE_H = 30
TOP = 26
MEASURE_H = 26
# Each stage of the voice-to-voice time, in its own colour.
STAGES = {"VAD stop wait": "s0", "STT": "s1", "end of turn": "s2", "LLM": "s3", "TTS": "s4"}
STAGES["playout"] = "s5"

CSS = """
:root { --bg:#f6f5f2; --card:#fff; --ink:#1d1d1f; --muted:#6e6e73; --line:#e4e2dc;
  --caller:#475569; --stt:#8e5cd9; --llm:#c9a227; --tool:#1f9d8b; --handoff:#e0562b;
  --m0:#3a86ff; --m1:#ff7a59; --m2:#2bb673; --m3:#b15cd6; --v2v:#e0562b; --gap:#7a5af8; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:14px/1.45 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
header { padding:28px 40px 8px; }
h1 { font-size:24px; margin:0 0 4px; letter-spacing:-0.01em; }
.sub { color:var(--muted); }
.figures { display:flex; gap:12px; flex-wrap:wrap; margin:16px 0 4px; }
.figure { background:var(--card); border:1px solid var(--line); border-radius:12px;
  padding:10px 14px; min-width:120px; }
.figure b { display:block; font-size:20px; }
.figure span { color:var(--muted); font-size:12px; }
.legend { display:flex; gap:14px; flex-wrap:wrap; margin:10px 0 0; color:var(--muted);
  font-size:12px; }
.key i { display:inline-block; width:12px; height:12px; border-radius:3px; margin-right:5px;
  vertical-align:-2px; }
.strip { display:flex; margin:18px 40px 6px; height:34px; border-radius:10px; overflow:hidden;
  border:1px solid var(--line); background:var(--card); }
.strip a { display:flex; align-items:center; justify-content:center; color:#fff;
  text-decoration:none; font-size:12px; border-right:2px solid var(--bg); min-width:18px; }
.strip a.opening { background:#9aa0a6; } .strip a.caller { background:var(--caller); }
.strip a.team { background:#7f8c8d; } .strip a.handoff { background:var(--handoff); }
main { padding:8px 40px 40px; }
section.turn { background:var(--card); border:1px solid var(--line); border-radius:16px;
  padding:18px 22px; margin:18px 0; box-shadow:0 1px 2px rgba(0,0,0,.04); }
.turn h2 { font-size:16px; margin:0; display:flex; gap:10px; align-items:baseline; flex-wrap:wrap; }
.turn h2 .said { font-weight:400; color:var(--ink); }
.turn h2 .at { color:var(--muted); font-weight:400; font-size:12px; margin-left:auto; }
.chips { display:flex; gap:8px; margin:10px 0 4px; flex-wrap:wrap; }
.chip { border-radius:999px; padding:3px 10px; font-size:12px; font-weight:600; color:#fff; }
.chip.v2v { background:var(--v2v); } .chip.gap { background:var(--gap); }
.chip.handoff { background:var(--handoff); }
svg { width:100%; height:auto; display:block; margin-top:8px; }
svg text { font-size:11px; fill:var(--ink); }
svg .lane-label { fill:var(--muted); font-size:12px; }
svg .axis { fill:var(--muted); font-size:10px; }
svg .grid { stroke:var(--line); stroke-width:1; }
svg .lane-bg { fill:#fafaf8; }
svg .bar { rx:5; opacity:.9; } svg g.item:hover .bar { opacity:1; stroke:#000; stroke-width:1; }
svg .caller { fill:var(--caller); } svg .stt { fill:var(--stt); } svg .llm { fill:var(--llm); }
svg .tool { fill:var(--tool); } svg .handoff { fill:var(--handoff); }
svg .m0 { fill:var(--m0); } svg .m1 { fill:var(--m1); } svg .m2 { fill:var(--m2); }
svg .m3 { fill:var(--m3); }
svg .tick { stroke:var(--ink); stroke-width:2; } svg .tick.turn { stroke:var(--caller); }
svg .tick.stt { stroke:var(--stt); } svg .tick.mark { stroke:#555; }
svg .tick.cut { stroke:var(--handoff); stroke-width:3; }
svg .handoff-line { stroke:var(--handoff); stroke-width:2; stroke-dasharray:5 4; }
svg .measure.v2v { stroke:var(--v2v); fill:var(--v2v); }
svg .measure.gap { stroke:var(--gap); fill:var(--gap); }
svg .band.v2v { fill:var(--v2v); opacity:.07; } svg .band.gap { fill:var(--gap); opacity:.12; }
svg .bar-label { fill:#fff; font-weight:600; pointer-events:none; }
.breakdown { display:flex; height:22px; border-radius:6px; overflow:hidden; margin:8px 0 2px;
  font-size:11px; }
.stage { display:flex; align-items:center; padding:0 6px; white-space:nowrap; overflow:hidden;
  color:#fff; min-width:4px; border-right:1px solid #fff; }
.stage.s0 { background:#64748b; } .stage.s1 { background:var(--stt); }
.stage.s2 { background:#94a3b8; } .stage.s3 { background:var(--llm); }
.stage.s4 { background:var(--m0); } .stage.s5 { background:var(--m2); }
details { margin-top:8px; } summary { cursor:pointer; color:var(--muted); }
table { border-collapse:collapse; width:100%; margin-top:8px; font-size:13px; }
td, th { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line); }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
"""


def page(title: str, turns: Sequence[Turn], plan: CallPlan) -> str:
    """The whole HTML document for a call's ``turns``."""
    origin = turns[0].start if turns else 0.0
    members = [m.name or m.id for m in plan.members.values()]
    lanes = [CALLER, STT, *[llm_lane(name) for name in members], TOOLS, TTS, HEARD]
    cards = "\n".join(_card(turn, lanes, origin) for turn in turns)
    data = json.dumps([t.to_json() for t in turns]).replace("</", "<\\/")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}: call timeline</title>
<style>{CSS}</style></head>
<body>
<header><h1>{escape(title)}</h1>
<div class="sub">{len(plan.members)} member{"s" if len(plan.members) != 1 else ""}:
{escape(", ".join(members))} · call {escape(plan.id)} · times on the runner's clock;
hover a bar for its exact times</div>
{_figures(turns)}{_legend(members)}</header>
{_strip(turns)}
<main>
{cards}
</main>
<script type="application/json" id="timeline-data">{data}</script>
</body></html>
"""


def _figures(turns: Sequence[Turn]) -> str:
    v2v = [m.ms for t in turns if (m := t.measure("voice-to-voice"))]
    gaps = [m.ms for t in turns if (m := t.measure("handoff gap"))]
    handoffs = [t.handoff for t in turns if t.handoff]
    length = turns[-1].end - turns[0].start if turns else 0.0
    figures = [
        (f"{len(turns)}", "turns"),
        (f"{length:.1f} s", "call length"),
        (f"{len(handoffs)}", "handoffs"),
    ]
    if v2v:
        figures.append((f"{sorted(v2v)[len(v2v) // 2]} ms", "median voice-to-voice"))
        figures.append((f"{max(v2v)} ms", "slowest voice-to-voice"))
    if gaps:
        figures.append((f"{max(gaps)} ms", "longest handoff gap"))
    items = "".join(f'<div class="figure"><b>{v}</b><span>{k}</span></div>' for v, k in figures)
    return f'<div class="figures">{items}</div>'


def _legend(members: Sequence[str]) -> str:
    keys = [("caller", "the caller speaks")]
    keys += [(f"m{i % 4}", f"{name}'s voice") for i, name in enumerate(members)]
    keys += [
        ("llm", "an LLM request, to its end"),
        ("tool", "a tool call, to its result"),
        ("handoff", "a handoff"),
        ("v2v", "voice-to-voice"),
        ("gap", "handoff gap"),
    ]
    items = "".join(
        f'<span class="key"><i style="background:var(--{tone})"></i>{escape(text)}</span>'
        for tone, text in keys
    )
    return f'<div class="legend">{items}</div>'


def _strip(turns: Sequence[Turn]) -> str:
    if not turns:
        return ""
    total = max(turns[-1].end - turns[0].start, 1e-3)
    blocks = []
    for turn in turns:
        share = max((turn.end - turn.start) / total * 100, 0.5)
        kind = "handoff" if turn.handoff else turn.opener
        tip = f"turn {turn.index}: {turn.title} {turn.said}"
        blocks.append(
            f'<a class="{kind}" href="#turn-{turn.index}" style="flex:{share:.2f}" '
            f'title="{escape(tip)}">{turn.index}</a>'
        )
    return f'<nav class="strip">{"".join(blocks)}</nav>'


def _card(turn: Turn, lanes: list[str], origin: float) -> str:
    chips = []
    if (v2v := turn.measure("voice-to-voice")) is not None:
        chips.append(f'<span class="chip v2v">voice-to-voice {v2v.ms} ms</span>')
    if turn.handoff:
        chips.append(f'<span class="chip handoff">handoff {escape(turn.handoff)}</span>')
    if (gap := turn.measure("handoff gap")) is not None:
        chips.append(f'<span class="chip gap">handoff gap {gap.ms} ms</span>')
    said = f"<span class=said>“{escape(turn.said)}”</span>" if turn.said else ""
    rows = "".join(
        f"<tr><td>{escape(s.what)}</td><td class=num>{s.at - origin:.3f} s</td>"
        f"<td class=num>{'' if s.latency_ms is None else f'{s.latency_ms} ms'}</td>"
        f"<td>{escape(('after ' + s.since) if s.since else '')}</td></tr>"
        for s in turn.steps
    )
    return f"""<section class="turn" id="turn-{turn.index}">
<h2>Turn {turn.index} · {escape(turn.title)} {said}
<span class="at">{turn.start - origin:.2f}–{turn.end - origin:.2f} s</span></h2>
<div class="chips">{"".join(chips)}</div>
{_breakdown(turn)}
{_svg(turn, lanes, origin)}
<details><summary>{len(turn.steps)} steps, with their latencies</summary>
<table><tr><th>step</th><th class=num>at</th><th class=num>latency</th><th>since</th></tr>
{rows}</table></details>
</section>"""


def _breakdown(turn: Turn) -> str:
    """Where the voice-to-voice time went, as one bar cut into its stages."""
    total = sum(ms for _, ms in turn.breakdown)
    if not total:
        return ""
    parts = "".join(
        f'<span class="stage {STAGES.get(stage, "")}" style="flex:{max(ms, 1)}" '
        f'title="{escape(stage)}: {ms} ms">{escape(stage)} {ms} ms</span>'
        for stage, ms in turn.breakdown
    )
    return f'<div class="breakdown" title="where the voice-to-voice time went">{parts}</div>'


def _svg(turn: Turn, lanes: list[str], origin: float) -> str:
    start, end = turn.start, max(turn.focus_end, turn.start + 0.05)
    plot = WIDTH - LABEL_W - 16
    height = TOP + len(lanes) * LANE_H + MEASURE_H * max(1, len(turn.measures)) + 8

    def x(t: float) -> float:
        return LABEL_W + (min(max(t, start), end) - start) / (end - start) * plot

    def y(lane: str) -> float:
        return TOP + lanes.index(lane) * LANE_H

    parts = []
    for lane in lanes:
        parts.append(
            f'<rect class="lane-bg" x="{LABEL_W}" y="{y(lane) + 2}" width="{plot}" '
            f'height="{LANE_H - 4}"/><text class="lane-label" x="8" y="{y(lane) + 19}">'
            f"{escape(lane)}</text>"
        )
    bottom = TOP + len(lanes) * LANE_H
    step = _axis_step(end - start)
    t = 0.0
    while t <= end - start + 1e-9:
        gx = x(start + t)
        parts.append(
            f'<line class="grid" x1="{gx:.1f}" y1="{TOP - 4}" x2="{gx:.1f}" y2="{bottom}"/>'
            f'<text class="axis" x="{gx:.1f}" y="{TOP - 8}" text-anchor="middle">+{t:g} s</text>'
        )
        t += step
    for i, m in enumerate(turn.measures):
        kind = "v2v" if m.name == "voice-to-voice" else "gap"
        x1, x2 = x(m.start), x(m.end)
        my = bottom + 14 + i * MEASURE_H
        tip = f"{m.name}: {m.ms} ms ({m.start - origin:.3f} s → {m.end - origin:.3f} s)"
        parts.append(
            f'<g class="item"><title>{escape(tip)}</title>'
            f'<rect class="band {kind}" x="{x1:.1f}" y="{TOP}" width="{max(x2 - x1, 1):.1f}" '
            f'height="{bottom - TOP}"/>'
            f'<line class="measure {kind}" x1="{x1:.1f}" y1="{my}" x2="{x2:.1f}" y2="{my}" '
            f'stroke-width="2"/>'
            f'<line class="measure {kind}" x1="{x1:.1f}" y1="{my - 5}" x2="{x1:.1f}" '
            f'y2="{my + 5}" stroke-width="2"/>'
            f'<line class="measure {kind}" x1="{x2:.1f}" y1="{my - 5}" x2="{x2:.1f}" '
            f'y2="{my + 5}" stroke-width="2"/>'
            f'<text class="measure {kind}" x="{x2 + 6:.1f}" y="{my + 4}" stroke="none">'
            f"{escape(m.name)} {m.ms} ms</text></g>"
        )
    parts += [_bar(b, x, y, origin) for b in turn.bars if b.lane in lanes]
    parts += [_tick(k, x, y, origin, bottom) for k in turn.ticks if k.lane in (*lanes, "*")]
    return (
        f'<svg viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="turn {turn.index} timeline">{"".join(parts)}</svg>'
    )


def _bar(bar: Bar, x: Callable[[float], float], y: Callable[[str], float], origin: float) -> str:
    x1, x2 = x(bar.start), x(bar.end)
    w = max(x2 - x1, 2)
    top = y(bar.lane) + 5
    tip = f"{bar.tip} ({bar.start - origin:.3f} s → {bar.end - origin:.3f} s)"
    label = ""
    fits = int((w - 12) / 6.5)  # characters of 11 px text that fit on the bar
    if fits >= 3:
        text = bar.label if len(bar.label) <= fits else bar.label[: fits - 1] + "…"
        label = f'<text class="bar-label" x="{x1 + 6:.1f}" y="{top + 14}">{escape(text)}</text>'
    return (
        f'<g class="item"><title>{escape(tip)}</title><rect class="bar {bar.tone}" '
        f'x="{x1:.1f}" y="{top}" width="{w:.1f}" height="{LANE_H - 10}"/>{label}</g>'
    )


def _tick(
    tick: Tick,
    x: Callable[[float], float],
    y: Callable[[str], float],
    origin: float,
    bottom: float,
) -> str:
    tx = x(tick.at)
    tip = f"{tick.tip} (at {tick.at - origin:.3f} s)"
    if tick.lane == "*":
        return (
            f'<g class="item"><title>{escape(tip)}</title><line class="handoff-line" '
            f'x1="{tx:.1f}" y1="{TOP}" x2="{tx:.1f}" y2="{bottom}"/>'
            f'<text x="{tx + 4:.1f}" y="{TOP + 11}" class="handoff" style="fill:var(--handoff);'
            f'font-weight:600">{escape(tick.label)}</text></g>'
        )
    top = y(tick.lane)
    return (
        f'<g class="item"><title>{escape(tip)}</title><line class="tick {tick.tone}" '
        f'x1="{tx:.1f}" y1="{top + 3}" x2="{tx:.1f}" y2="{top + LANE_H - 3}"/>'
        f'<text x="{tx + 3:.1f}" y="{top + LANE_H - 6}">{escape(_clip(tick.label))}</text></g>'
    )


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _axis_step(secs: float) -> float:
    for step in (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0):
        if secs / step <= 12:
            return step
    return 30.0
