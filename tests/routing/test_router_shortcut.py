"""The routers' shortcut and direct branches: they change nothing but cost.

The shortcut (``routing/router.py``) hands a frame straight to the active
service instead of to every branch of pipecat's switcher. It is right only
while pipecat's switcher does nothing else with those frame types, which
these tests pin down three ways: a fingerprint of the pipecat code the
argument rests on, a check that none of that code singles out a shortcut
type, and the same frames through a stock pipecat switcher and through a
router coming out the same, in the same order. The same comparison covers
the routers' branches, which are the services themselves, linked to the
switcher with nothing between (``teamrunner.pipecat_internals.switcher.DirectSwitcher``):
a frame that is not a shortcut's reaches the active service alone, and the
lifecycle frames reach every service, as pipecat's filters let them.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
from pipecat.frames.frames import (
    BotSpeakingFrame,
    CancelFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    LLMContextFrame,
    LLMTextFrame,
    ManuallySwitchServiceFrame,
    StartFrame,
    SystemFrame,
    TextFrame,
    TTSSpeakFrame,
    UserAudioRawFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FrameProcessed
from pipecat.pipeline.llm_switcher import LLMSwitcher
from pipecat.pipeline.parallel_pipeline import ParallelPipeline
from pipecat.pipeline.pipeline import Pipeline, PipelineSink, PipelineSource
from pipecat.pipeline.service_switcher import ServiceSwitcher
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.filters.function_filter import FunctionFilter
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import SleepFrame, run_test

from routing import RoutingLLMService, RoutingSTTService, RoutingTTSService
from routing.router import SHORTCUT_FRAMES, MemberRouting
from teamrunner.pipecat_internals.switcher import BranchEnd

from routing_doubles import Member, run_router

# --- 1. The pipecat code the shortcut's argument rests on has not changed. ---

# What a frame meets on pipecat's way through a switcher, what the shortcut
# assumes of it (see the comment above SHORTCUT_FRAMES), and what the routers'
# branches stand in for (teamrunner.pipecat_internals.switcher.DirectSwitcher).
RELIED_ON: dict[str, Callable[..., Any]] = {
    # Nothing but fan-out for frames that are not switch, settings or context frames.
    "ServiceSwitcher.process_frame": ServiceSwitcher.process_frame,
    "LLMSwitcher.process_frame": LLMSwitcher.process_frame,
    # What a service pushes leaves the same way whichever way the frame came in.
    "ServiceSwitcher.push_frame": ServiceSwitcher.push_frame,
    "ParallelPipeline._parallel_push_frame": ParallelPipeline._parallel_push_frame,
    "ParallelPipeline._pipeline_sink_push_frame": ParallelPipeline._pipeline_sink_push_frame,
    # Each stock branch: source → filter → service → filter → sink, in direct
    # mode, passing a frame only to the active service. The routers link each
    # service to the switcher itself, and hand a frame to the active one alone.
    "ServiceSwitcher._make_pipeline_definition": ServiceSwitcher._make_pipeline_definition,
    "ServiceSwitcher._make_pipeline_definitions": ServiceSwitcher._make_pipeline_definitions,
    "ServiceSwitcher.__init__": ServiceSwitcher.__init__,
    "ParallelPipeline.__init__": ParallelPipeline.__init__,
    "FunctionFilter.process_frame": FunctionFilter.process_frame,
    "FunctionFilter._should_passthrough_frame": FunctionFilter._should_passthrough_frame,
    # The fan-out, and the pause around Start/End/Cancel.
    "ParallelPipeline.process_frame": ParallelPipeline.process_frame,
    # Where the branches are read: set up, cleaned up, listed.
    "ParallelPipeline.setup": ParallelPipeline.setup,
    "ParallelPipeline.cleanup": ParallelPipeline.cleanup,
    "ParallelPipeline.processors": ParallelPipeline.processors.fget,  # type: ignore[attr-defined]
    "ParallelPipeline.entry_processors": ParallelPipeline.entry_processors.fget,  # type: ignore[attr-defined]
    "ParallelPipeline.processors_with_metrics": ParallelPipeline.processors_with_metrics,
    "Pipeline.processors_with_metrics": Pipeline.processors_with_metrics,
    # Stock branches are pipelines in direct mode: delivery ends before process_frame returns.
    "Pipeline.__init__": Pipeline.__init__,
    "Pipeline.process_frame": Pipeline.process_frame,
    "PipelineSource.__init__": PipelineSource.__init__,
    "PipelineSource.process_frame": PipelineSource.process_frame,
    "PipelineSink.__init__": PipelineSink.__init__,
    "PipelineSink.process_frame": PipelineSink.process_frame,
    "FrameProcessor.queue_frame": FrameProcessor.queue_frame,
    # A service's push reaches whatever stands next to it through its queue_frame.
    "FrameProcessor.push_frame": FrameProcessor.push_frame,
    "FrameProcessor.__internal_push_frame": FrameProcessor._FrameProcessor__internal_push_frame,  # type: ignore[attr-defined]
    # What the shortcut still runs on the switcher, and skips on the branches' plumbing.
    "FrameProcessor.process_frame": FrameProcessor.process_frame,
}

# Fingerprints in pipecat 1.14.0 (see fingerprint()).
FINGERPRINTS = {
    "ServiceSwitcher.process_frame": "31330c9e618e3521",
    "LLMSwitcher.process_frame": "e608a3db62e8156f",
    "ServiceSwitcher.push_frame": "5a17847b4d8bbe9c",
    "ParallelPipeline._parallel_push_frame": "20be815cd8a6d482",
    "ParallelPipeline._pipeline_sink_push_frame": "eb08c9973cc7b853",
    "ServiceSwitcher._make_pipeline_definition": "01bf94bf85ee8f58",
    "ServiceSwitcher._make_pipeline_definitions": "d6b8bcf122d80f7b",
    "ServiceSwitcher.__init__": "341ff635760a2850",
    "ParallelPipeline.__init__": "65afef3fad29e9a8",
    "FunctionFilter.process_frame": "7de9091c51dac2e0",
    "FunctionFilter._should_passthrough_frame": "18c91d2c8e3d3288",
    "ParallelPipeline.process_frame": "7785cb9fbc693799",
    "ParallelPipeline.setup": "663601d95689b66f",
    "ParallelPipeline.cleanup": "1345bbcef8fccf1e",
    "ParallelPipeline.processors": "17e3341c92622289",
    "ParallelPipeline.entry_processors": "9ce1e76d775aaac9",
    "ParallelPipeline.processors_with_metrics": "cf013270a7c16663",
    "Pipeline.processors_with_metrics": "b7ae03647b046fa4",
    "Pipeline.__init__": "00821dd9e966b998",
    "Pipeline.process_frame": "11219e613b382125",
    "PipelineSource.__init__": "2f320d2527547266",
    "PipelineSource.process_frame": "3744f9cbaf472512",
    "PipelineSink.__init__": "237b00480348c923",
    "PipelineSink.process_frame": "ded13cd2eb952d42",
    "FrameProcessor.queue_frame": "fe88c4b0c7113ad7",
    "FrameProcessor.push_frame": "9adefdbe89ecb526",
    "FrameProcessor.__internal_push_frame": "b46f0d61ab780d14",
    "FrameProcessor.process_frame": "4c747e162495a580",
}


def _syntax(function: Callable[..., Any]) -> ast.AST:
    """The function's syntax tree without its docstrings: comments and docs may change freely."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def fingerprint(function: Callable[..., Any]) -> str:
    """A hash of the code as ``ast.unparse`` writes it: comments and layout do not count."""
    return hashlib.sha256(ast.unparse(_syntax(function)).encode()).hexdigest()[:16]


def test_pipecat_code_the_shortcut_relies_on_is_unchanged() -> None:
    now = {name: fingerprint(function) for name, function in RELIED_ON.items()}
    changed = sorted(name for name in RELIED_ON if now[name] != FINGERPRINTS.get(name))
    assert not changed, (
        f"pipecat changed {', '.join(changed)}. Two things rest on this code. "
        "routing/router.py hands the SHORTCUT_FRAMES straight to the active service "
        "(MemberRouting.process_frame), on an argument written out above SHORTCUT_FRAMES; "
        "teamrunner/pipecat_internals/switcher.py's DirectSwitcher links each service to the "
        "switcher itself in place of a pipeline, source, filters and sink. Re-read each "
        "changed function and check that it still (1) does nothing with a shortcut frame "
        "type but fan it out to the branches, (2) delivers a frame to the active service "
        "alone, Start/End/Cancel to every one, (3) in direct mode, before the switcher's "
        "process_frame returns, (4) sends what a service pushes (through its neighbour's "
        "queue_frame) to _pipeline_sink_push_frame going down and _parallel_push_frame going "
        "up, passing nothing once a CancelFrame has gone through, and (5) keeps the "
        "branches in _pipelines, set up, cleaned up and listed from "
        "there, in the state ParallelPipeline.__init__ gives it (DirectSwitcher sets the same "
        "attributes). If one no longer holds, take the frame type out of SHORTCUT_FRAMES or "
        "change the shortcut or DirectSwitcher. Then run "
        "tests/routing and set FINGERPRINTS here to:\n"
        + "".join(f'    "{name}": "{now[name]}",\n' for name in RELIED_ON)
    )


# --- 2. None of that code singles out a shortcut frame type. ---

# The type checks that cannot apply on a switcher's way, and why.
NOT_ON_THE_WAY = {
    # The switcher's filters are built with filter_system_frames=True, so this
    # check never lets a system frame past a closed filter (fingerprinted above).
    ("FunctionFilter._should_passthrough_frame", "SystemFrame"),
}


def types_checked(name: str, function: Callable[..., Any]) -> dict[str, type]:
    """The frame classes ``function`` tests frames against with ``isinstance``.

    Reads ``isinstance(x, Name)`` and ``isinstance(x, (Name, ...))``, the way
    pipecat writes them; the fingerprint catches any other kind of change.
    """
    checked: dict[str, type] = {}
    for node in ast.walk(_syntax(function)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"):
            continue
        arg = node.args[1]
        for element in arg.elts if isinstance(arg, ast.Tuple) else [arg]:
            if isinstance(element, ast.Name) and (name, element.id) not in NOT_ON_THE_WAY:
                value = function.__globals__.get(element.id)
                if isinstance(value, type) and issubclass(value, Frame):
                    checked[element.id] = value
    return checked


def test_no_pipecat_code_on_the_way_singles_out_a_shortcut_frame_type() -> None:
    special = {
        f"{name} checks {checked}: {shortcut.__name__} is one"
        for name, function in RELIED_ON.items()
        for checked, frame_type in types_checked(name, function).items()
        for shortcut in SHORTCUT_FRAMES
        if issubclass(shortcut, frame_type)
    }
    assert not special, (
        "pipecat treats a shortcut frame type specially, and the shortcut would skip that: "
        f"{sorted(special)}. Take the type out of routing/router.py's SHORTCUT_FRAMES."
    )


def original() -> Callable[[Frame], bool]:
    def check(frame: Frame) -> bool:
        return isinstance(frame, TextFrame)

    return check


def documented() -> Callable[[Frame], bool]:
    def check(frame: Frame) -> bool:
        """Say what it does."""
        # And why.
        return isinstance(frame, TextFrame)

    return check


def changed() -> Callable[[Frame], bool]:
    def check(frame: Frame) -> bool:
        return isinstance(frame, (TextFrame, BotSpeakingFrame))

    return check


def test_the_fingerprint_ignores_comments_and_docstrings_but_not_code() -> None:
    assert fingerprint(documented()) == fingerprint(original())
    assert fingerprint(changed()) != fingerprint(original())


def test_the_type_check_would_see_a_shortcut_type_singled_out() -> None:
    def special_cases(frame: Frame) -> None:
        if isinstance(frame, (ManuallySwitchServiceFrame, BotSpeakingFrame)):
            return

    assert types_checked("special_cases", special_cases) == {
        "ManuallySwitchServiceFrame": ManuallySwitchServiceFrame,
        "BotSpeakingFrame": BotSpeakingFrame,
    }
    # And it reads pipecat's own special cases.
    assert {"ServiceSwitcherFrame", "ServiceUpdateSettingsFrame"} <= set(
        types_checked("ServiceSwitcher.process_frame", ServiceSwitcher.process_frame)
    )


# --- 3. Which frames take the shortcut. ---


def audio(n: int = 1) -> InputAudioRawFrame:
    return InputAudioRawFrame(audio=bytes([n]) * 320, sample_rate=16000, num_channels=1)


SHORTCUT_SAMPLES: dict[type[Frame], Callable[[], Frame]] = {
    InputAudioRawFrame: audio,
    UserSpeakingFrame: UserSpeakingFrame,
    BotSpeakingFrame: BotSpeakingFrame,
    LLMTextFrame: lambda: LLMTextFrame("word"),
}


class ToolText(LLMTextFrame):
    """A subclass of a shortcut type: something a later pipecat might single out."""


OTHER_SAMPLES: dict[str, Callable[[], Frame]] = {
    "text": lambda: TextFrame("x"),
    "tts-speak": lambda: TTSSpeakFrame("x"),
    "user-started-speaking": UserStartedSpeakingFrame,
    "context": lambda: LLMContextFrame(context=LLMContext()),
    "user-audio (subclass)": lambda: UserAudioRawFrame(
        audio=b"\0" * 320, sample_rate=16000, num_channels=1
    ),
    "llm-text (subclass)": lambda: ToolText("x"),
}


def test_every_shortcut_frame_type_has_a_sample() -> None:
    assert set(SHORTCUT_SAMPLES) == SHORTCUT_FRAMES


class CountedRouting(RoutingSTTService):
    """An STT router that counts the frames it hands over the switcher's whole way."""

    def __init__(self, by_member: dict[str, FrameProcessor], start_member_id: str) -> None:
        super().__init__(by_member, start_member_id)  # type: ignore[arg-type]
        self.whole_way = 0

    def _active_branch(self) -> FrameProcessor:
        self.whole_way += 1
        return super()._active_branch()


def stt_router() -> tuple[CountedRouting, Member, Member, Member]:
    a, b, c = Member("A"), Member("B"), Member("C")
    return CountedRouting({"a": a, "b": b, "c": c}, "a"), a, b, c


@pytest.mark.parametrize("direction", list(FrameDirection), ids=lambda d: d.name.lower())
@pytest.mark.parametrize(
    "make", SHORTCUT_SAMPLES.values(), ids=[t.__name__ for t in SHORTCUT_SAMPLES]
)
async def test_a_shortcut_frame_skips_the_switcher_and_reaches_the_active_service(
    make: Callable[[], Frame], direction: FrameDirection
) -> None:
    router, a, b, c = stt_router()
    sent = make()

    run = await run_router(router, [sent], direction=direction)

    assert router.whole_way == 0
    assert (a.frames, b.frames, c.frames) == ([sent], [], [])
    assert list(run.down if direction == FrameDirection.DOWNSTREAM else run.up) == [sent]


class ProcessedBy(BaseObserver):
    """Records which processors pipecat told observers had processed each frame."""

    def __init__(self) -> None:
        super().__init__()
        self.processed: list[tuple[FrameProcessor, Frame]] = []

    async def on_process_frame(self, data: FrameProcessed) -> None:
        self.processed.append((data.processor, data.frame))


@pytest.mark.parametrize(
    "make", SHORTCUT_SAMPLES.values(), ids=[t.__name__ for t in SHORTCUT_SAMPLES]
)
async def test_observers_see_the_router_process_a_shortcut_frame(
    make: Callable[[], Frame],
) -> None:
    router, a, _, _ = stt_router()
    observer = ProcessedBy()
    sent = make()

    await run_test(router, frames_to_send=[sent], observers=[observer])

    assert (router, sent) in observer.processed
    assert (a, sent) in observer.processed


@pytest.mark.parametrize("make", OTHER_SAMPLES.values(), ids=list(OTHER_SAMPLES))
async def test_every_other_frame_takes_the_switchers_way_to_the_active_service_alone(
    make: Callable[[], Frame],
) -> None:
    router, a, b, c = stt_router()
    sent = make()

    run = await run_router(router, [sent])

    assert router.whole_way == 1
    assert (a.frames, b.frames, c.frames) == ([sent], [], [])
    assert list(run.down) == [sent]


async def test_the_start_and_the_end_reach_every_service_and_leave_once() -> None:
    router, a, b, c = stt_router()

    run = await run_router(router, [], ignore_start=False)

    for service in (a, b, c):
        assert (service.count(StartFrame), service.count(EndFrame)) == (1, 1)
    assert sum(isinstance(f, StartFrame) for f in run.down) == 1


@pytest.mark.parametrize(
    "router_type",
    [RoutingSTTService, RoutingLLMService, RoutingTTSService],
    ids=lambda t: t.__name__,
)
def test_a_routers_branches_are_its_services_with_nothing_between(
    router_type: type[MemberRouting],
) -> None:
    a, b = Member("A"), Member("B")
    router = router_type({"a": a, "b": b}, "a")  # type: ignore[dict-item]

    assert router.processors == [a, b]
    assert router.entry_processors == [a, b]
    for service in (a, b):
        assert isinstance(service.next, BranchEnd) and isinstance(service.previous, BranchEnd)
        assert not isinstance(service.next, FrameProcessor)


class Lingers(Member):
    """A service that still pushes a frame each way after it has passed a cancel on."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, CancelFrame):
            await self.push_frame(TextFrame("late, up"), FrameDirection.UPSTREAM)
            await self.push_frame(TextFrame("late, down"))


async def test_after_a_cancel_a_router_lets_out_what_a_stock_switcher_does() -> None:
    out: dict[str, list[str]] = {}
    for label in ("stock", "router"):
        a, b = Lingers("A"), Lingers("B")
        if label == "router":
            switcher: ServiceSwitcher = RoutingSTTService({"a": a, "b": b}, "a")  # type: ignore[dict-item]
        else:
            switcher = ServiceSwitcher([a, b])
        down, up = await run_test(switcher, frames_to_send=[CancelFrame()], send_end_frame=False)
        out[label] = [type(f).__name__ for f in [*down, *up]]

    assert out["router"] == out["stock"] == ["CancelFrame"]


async def test_a_services_ends_pass_nothing_once_a_cancel_has_entered_its_branch() -> None:
    a, b = Member("A"), Member("B")
    router = RoutingSTTService({"a": a, "b": b}, "a")  # type: ignore[dict-item]
    await run_test(router, frames_to_send=[CancelFrame()], send_end_frame=False)

    late = []
    for service in (a, b):
        for direction in FrameDirection:
            frame = TextFrame("late")
            late.append(frame.id)
            await service.push_frame(frame, direction)

    assert not [frame_id for frame_id in late if frame_id in router._seen_ids]


class Passed:
    """A branch end's destination: records what reached it."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    async def __call__(self, frame: Frame, direction: FrameDirection) -> None:
        self.frames.append(frame)


@pytest.mark.parametrize(
    ("pipecat_end", "direction"),
    [(PipelineSink, FrameDirection.DOWNSTREAM), (PipelineSource, FrameDirection.UPSTREAM)],
    ids=["sink", "source"],
)
async def test_a_branch_end_passes_on_what_pipecats_sink_or_source_does(
    pipecat_end: type[FrameProcessor], direction: FrameDirection
) -> None:
    frames = [TextFrame("before"), CancelFrame(), TextFrame("after")]
    by_pipecat, by_router = Passed(), Passed()
    ends = [pipecat_end(by_pipecat), BranchEnd("end", by_router)]  # type: ignore[call-arg]

    for end in ends:
        for frame in frames:
            await end.queue_frame(frame, direction)

    assert by_router.frames == by_pipecat.frames == frames[:2]


class Metered(Member):
    def can_generate_metrics(self) -> bool:
        return True


def test_a_router_lists_the_services_that_make_metrics_as_a_stock_switcher_does() -> None:
    a, b, c = Metered("A"), Member("B"), Metered("C")
    stock = ServiceSwitcher([Metered("A"), Member("B"), Metered("C")])
    router = RoutingSTTService({"a": a, "b": b, "c": c}, "a")  # type: ignore[dict-item]

    assert [p.name for p in router.processors_with_metrics()] == ["A", "C"]
    assert [p.name for p in stock.processors_with_metrics()] == ["A", "C"]


# --- 4. Through a stock switcher and through a router: the same frames out. ---

# A stock pipecat switcher of the class each router is built on.
STOCK: dict[type[MemberRouting], type[ServiceSwitcher]] = {
    RoutingSTTService: ServiceSwitcher,
    RoutingLLMService: LLMSwitcher,
    RoutingTTSService: ServiceSwitcher,
}


def scenario(frame_type: type[Frame], b: FrameProcessor) -> tuple[list[Frame], int]:
    """Shortcut frames of ``frame_type`` mixed with frames that go pipecat's way, switching to b.

    The others are of the same tier (system, or data and control), which
    pipecat keeps in order. A system frame overtakes a switch frame in a
    processor's queue, so system frames after the switch wait for it to land.

    Returns:
        The frames, each numbered in its metadata, and how many come before the switch.
    """
    make = SHORTCUT_SAMPLES[frame_type]
    if issubclass(frame_type, SystemFrame):
        other: Callable[[], Frame] = UserStartedSpeakingFrame
        settle: list[Frame] = [SleepFrame(sleep=0.1)]
    else:
        other = OTHER_SAMPLES["text"]
        settle = []
    before = [make(), other(), make(), make()]
    after = [make(), other(), make(), other()]
    frames = [*before, ManuallySwitchServiceFrame(service=b), *settle, *after]
    for n, frame in enumerate(frames):
        frame.metadata["n"] = n
    return frames, len(before)


Trace = list[tuple[str, Any, str]]


def trace(frames: list[tuple[Frame, FrameDirection]]) -> Trace:
    """What can be compared between two runs: each frame's type, place in the script, direction."""
    return [(type(f).__name__, f.metadata.get("n"), d.name) for f, d in frames]


def numbers(frames: Trace) -> list[int]:
    return [n for _, n, _ in frames if n is not None]


@pytest.mark.parametrize("direction", list(FrameDirection), ids=lambda d: d.name.lower())
@pytest.mark.parametrize("frame_type", SHORTCUT_SAMPLES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("router_type", STOCK, ids=lambda t: t.__name__)
async def test_a_router_and_a_stock_switcher_give_the_same_frames_in_the_same_order(
    router_type: type[MemberRouting], frame_type: type[Frame], direction: FrameDirection
) -> None:
    traces: dict[str, tuple[Trace, Trace, Trace]] = {}
    for label in ("stock", "router"):
        a, b = Member("A"), Member("B")
        if label == "router":
            switcher: ServiceSwitcher = router_type({"a": a, "b": b}, "a")  # type: ignore[dict-item]
        else:
            switcher = STOCK[router_type]([a, b])  # type: ignore[list-item]
        frames, switch_at = scenario(frame_type, b)
        run = await run_router(switcher, frames, direction=direction, ignore_start=False)
        out = [(f, FrameDirection.DOWNSTREAM) for f in run.down]
        out += [(f, FrameDirection.UPSTREAM) for f in run.up]
        traces[label] = (trace(a.received), trace(b.received), trace(out))

    # Each service was handed the same frames (the switcher's own included), in
    # the same order and direction, and the same frames left the switcher.
    assert traces["router"] == traces["stock"]
    a_got, b_got, _ = traces["router"]
    sent = [
        n
        for n, f in enumerate(frames)
        if not isinstance(f, ManuallySwitchServiceFrame | SleepFrame)
    ]
    assert numbers(a_got) == sent[:switch_at]
    assert numbers(b_got) == sent[switch_at:]
