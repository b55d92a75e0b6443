"""A router forgets the ids of frames long gone, and still pushes each frame once.

pipecat's ``ParallelPipeline`` keeps the id of every frame that leaves it, for
as long as it lives (``teamrunner.pipecat_internals.switcher``). These tests
pin how pipecat uses that set, show a stock switcher's growing with every
frame, and a router's staying bounded, with every frame, its start included,
still out once and in order.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from pipecat.frames.frames import InputAudioRawFrame, StartFrame
from pipecat.pipeline.parallel_pipeline import ParallelPipeline
from pipecat.pipeline.service_switcher import ServiceSwitcher, ServiceSwitcherStrategyManual
from pipecat.tests.utils import run_test

from routing import RoutingSTTService
from teamrunner.pipecat_internals.switcher import SEEN_FRAMES, RecentFrameIds

from routing_doubles import Member

FRAMES = 3 * SEEN_FRAMES


def audio(n: int) -> InputAudioRawFrame:
    return InputAudioRawFrame(
        audio=n.to_bytes(2, "little") * 320, sample_rate=16000, num_channels=1
    )


def test_pipecat_uses_the_seen_ids_only_to_add_and_to_ask() -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(ParallelPipeline)))
    uses = []
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Attribute) and child.attr == "_seen_ids":
                uses.append(node)
    kinds = sorted(
        "assigned"
        if isinstance(use, ast.Assign)
        else "added"
        if isinstance(use, ast.Attribute) and use.attr == "add"
        else "asked"
        if isinstance(use, ast.Compare) and isinstance(use.ops[0], ast.NotIn | ast.In)
        else ast.dump(use)
        for use in uses
    )

    assert kinds == ["added", "asked", "assigned"]


async def test_a_stock_switcher_keeps_every_frame_id_a_router_only_the_latest() -> None:
    stock = ServiceSwitcher([Member("a"), Member("b")], strategy_type=ServiceSwitcherStrategyManual)
    router = RoutingSTTService({"a": Member("a2"), "b": Member("b2")}, "a")
    frames = [audio(n) for n in range(FRAMES)]

    stock_out, _ = await run_test(stock, frames_to_send=frames, ignore_start=False)
    router_out, _ = await run_test(router, frames_to_send=frames, ignore_start=False)

    assert len(stock._seen_ids) > FRAMES  # pipecat's own: every frame, for its whole life
    seen = router._seen_ids
    assert isinstance(seen, RecentFrameIds) and len(seen) == SEEN_FRAMES
    # Every frame out once, the start included, in order.
    for out in (stock_out, router_out):
        assert [type(f) for f in out] == [StartFrame, *[InputAudioRawFrame] * FRAMES]
    assert [f.id for f in router_out[1:]] == [f.id for f in frames]


def test_the_latest_ids_are_kept_and_the_oldest_forgotten() -> None:
    seen = RecentFrameIds(limit=3)
    for frame_id in (1, 2, 3, 2, 4):
        seen.add(frame_id)

    assert [frame_id in seen for frame_id in (1, 2, 3, 4)] == [False, True, True, True]
    assert len(seen) == 3
