"""The routers in a real pipeline: which member's service gets each frame, and switching.

Each router runs under pipecat's ``run_test`` over ``Member`` services that
record what they are handed. The STT and TTS routers switch by a frame from
the head of the pipeline, behind what is already queued; the LLM router
switches at once.
"""

from __future__ import annotations

import pytest
from pipecat.frames.frames import (
    BotSpeakingFrame,
    CancelFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMTextFrame,
    LLMUpdateSettingsFrame,
    ServiceUpdateSettingsFrame,
    StartFrame,
    STTUpdateSettingsFrame,
    TextFrame,
    TTSSpeakFrame,
    TTSUpdateSettingsFrame,
    UserSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.settings import LLMSettings, STTSettings, TTSSettings

from routing import RoutingLLMService, RoutingSTTService, RoutingTTSService
from routing.router import MemberRouting, RoutingStrategy
from teamrunner.errors import MemberSwitchError

from routing_doubles import Member, SwitchTo, run_router

ROUTERS: dict[str, type[MemberRouting]] = {
    "stt": RoutingSTTService,
    "llm": RoutingLLMService,
    "tts": RoutingTTSService,
}
SWITCHED_BY_FRAME = ("stt", "tts")


def team(kind: str, **extra: Member | None) -> tuple[MemberRouting, Member, Member]:
    """A router of ``kind`` over members a (active at the start) and b, plus ``extra``."""
    a, b = Member("A"), Member("B")
    router = ROUTERS[kind]({"a": a, "b": b, **extra}, "a")  # type: ignore[arg-type]
    return router, a, b


def audio(n: int) -> InputAudioRawFrame:
    return InputAudioRawFrame(audio=bytes([n]) * 320, sample_rate=16000, num_channels=1)


def texts(frames: list[Frame]) -> list[str]:
    return [f.text for f in frames if isinstance(f, TextFrame)]


@pytest.mark.parametrize("kind", ROUTERS)
@pytest.mark.parametrize(
    "make",
    [
        lambda: audio(1),
        UserSpeakingFrame,
        BotSpeakingFrame,
        lambda: LLMTextFrame("hi"),
        lambda: TextFrame("hi"),
        lambda: TTSSpeakFrame("hi"),
    ],
    ids=["audio", "user-speaking", "bot-speaking", "llm-text", "text", "tts-speak"],
)
@pytest.mark.parametrize("direction", list(FrameDirection), ids=lambda d: d.name.lower())
async def test_frames_reach_only_the_active_members_service_and_travel_on(
    kind: str, make, direction: FrameDirection
) -> None:
    router, a, b = team(kind)
    sent = make()

    run = await run_router(router, [sent], direction=direction)

    assert a.frames == [sent]
    assert [d for f, d in a.received if f is sent] == [direction]
    assert b.frames == []
    assert list(run.down if direction == FrameDirection.DOWNSTREAM else run.up) == [sent]


@pytest.mark.parametrize("kind", SWITCHED_BY_FRAME)
async def test_stt_and_tts_switch_behind_the_frames_already_queued(kind: str) -> None:
    router, a, b = team(kind)

    run = await run_router(
        router,
        [
            LLMTextFrame("before"),
            TextFrame("before"),
            SwitchTo("b", then=[LLMTextFrame("after"), TextFrame("after")]),
            # Queued before the switch was asked for, so still the previous member's.
            LLMTextFrame("queued"),
            TextFrame("queued"),
        ],
    )

    assert texts(a.frames) == ["before", "before", "queued", "queued"]
    assert texts(b.frames) == ["after", "after"]
    assert router.strategy.active_service is b
    [switch] = run.switch_frames
    assert switch.service is b
    # A barge-in while it is on its way must not drop it.
    assert switch.interruptible is False


async def test_llm_switches_before_set_active_member_returns() -> None:
    router, _, b = team("llm")

    # Outside any pipeline: no frame is involved.
    await router.set_active_member("b")

    assert router.strategy.active_service is b


async def test_llm_switch_reaches_frames_from_either_end_at_once() -> None:
    router, a, b = team("llm")

    run = await run_router(
        router,
        [
            TextFrame("before"),
            # The next inference comes back up from the end of the pipeline.
            SwitchTo("b", then=[TextFrame("next node")], up=[TextFrame("next inference")]),
        ],
    )

    assert texts(a.frames) == ["before"]
    assert sorted(texts(b.frames)) == ["next inference", "next node"]
    assert run.switch_frames == []


@pytest.mark.parametrize("kind", ROUTERS)
async def test_a_member_without_a_service_keeps_the_one_in_use(kind: str) -> None:
    router, a, b = team(kind, nobody=None)

    run = await run_router(
        router,
        [
            SwitchTo(
                "nobody",
                then=[
                    TextFrame("start member's"),
                    SwitchTo("b", then=[SwitchTo("nobody", then=[TextFrame("b's")])]),
                ],
            )
        ],
    )

    assert run.errors == []
    assert texts(a.frames) == ["start member's"]
    assert texts(b.frames) == ["b's"]


@pytest.mark.parametrize("kind", ROUTERS)
async def test_switching_to_a_member_whose_service_failed_raises_and_keeps_the_active_one(
    kind: str,
) -> None:
    router, a, b = team(kind)
    await b.set_usable(False)

    run = await run_router(router, [SwitchTo("b", then=[TextFrame("after")])])

    [error] = run.errors
    assert "can no longer be used" in str(error)
    assert run.switch_frames == []  # nothing was queued to undo
    assert texts(a.frames) == ["after"]
    assert b.frames == []
    assert router.strategy.active_service is a


@pytest.mark.parametrize("kind", ROUTERS)
async def test_a_member_the_router_does_not_know_is_refused(kind: str) -> None:
    router, a, _ = team(kind)

    with pytest.raises(MemberSwitchError, match="knows no member 'stranger'"):
        await router.set_active_member("stranger")
    with pytest.raises(MemberSwitchError):
        router.check_member("stranger")
    assert router.strategy.active_service is a


def test_service_for_names_each_members_service() -> None:
    a, b = Member("A"), Member("B")
    router = RoutingTTSService({"a": a, "b": b, "c": a, "n": None}, "b")  # type: ignore[dict-item]

    assert [router.service_for(m) for m in ("a", "b", "c", "n")] == [a, b, a, None]
    assert router.services == [b, a]  # deduplicated, the start member's first
    assert router.strategy.active_service is b


UPDATES: dict[str, type[ServiceUpdateSettingsFrame]] = {
    "stt": STTUpdateSettingsFrame,
    "llm": LLMUpdateSettingsFrame,
    "tts": TTSUpdateSettingsFrame,
}
DELTAS = {"stt": STTSettings, "llm": LLMSettings, "tts": TTSSettings}


@pytest.mark.parametrize("kind", ROUTERS)
async def test_a_settings_update_addressed_to_an_inactive_service_reaches_it_alone(
    kind: str,
) -> None:
    router, a, b = team(kind)
    update = UPDATES[kind](delta=DELTAS[kind](), service=b)

    run = await run_router(router, [update])

    assert [type(f) for f in b.frames] == [type(update)]
    assert b.frames[0].service is b
    assert a.frames == [update]  # the active service passes it on, addressed elsewhere
    assert list(run.down) == [update]  # one copy leaves the router


@pytest.mark.parametrize("kind", ROUTERS)
async def test_an_unaddressed_settings_update_reaches_the_active_service_alone(kind: str) -> None:
    router, a, b = team(kind)
    update = UPDATES[kind](delta=DELTAS[kind]())

    run = await run_router(router, [update])

    assert a.frames == [update]
    assert b.frames == []
    assert list(run.down) == [update]


@pytest.mark.parametrize("kind", ROUTERS)
async def test_start_and_end_reach_every_service_once_and_leave_once(kind: str) -> None:
    # Member c shares a's service: it is still one service, started once.
    a, b = Member("A"), Member("B")
    router = ROUTERS[kind]({"a": a, "b": b, "c": a}, "a")  # type: ignore[arg-type]

    run = await run_router(router, [TextFrame("x")], ignore_start=False)

    for service in (a, b):
        assert (service.count(StartFrame), service.count(EndFrame)) == (1, 1)
    assert [type(f) for f in run.down] == [StartFrame, TextFrame]


@pytest.mark.parametrize("kind", ROUTERS)
async def test_cancel_reaches_every_service_once(kind: str) -> None:
    router, a, b = team(kind)

    await run_router(router, [CancelFrame()])

    assert (a.count(CancelFrame), b.count(CancelFrame)) == (1, 1)


@pytest.mark.parametrize("kind", ROUTERS)
async def test_an_interruption_reaches_the_active_service_alone(kind: str) -> None:
    router, a, b = team(kind)

    await run_router(router, [InterruptionFrame()])

    assert [type(f) for f in a.frames] == [InterruptionFrame]
    assert b.frames == []


@pytest.mark.parametrize("kind", ROUTERS)
async def test_every_router_switches_through_a_routing_strategy_that_can_switch_at_once(
    kind: str,
) -> None:
    router, _, b = team(kind)
    # pipecat builds the strategy from the class the router hands it.
    assert isinstance(router.strategy, RoutingStrategy)

    assert await router.strategy.activate(b) is b
    assert router.strategy.active_service is b


async def test_strategy_activate_refuses_a_failed_or_foreign_service() -> None:
    router, a, b = team("stt")
    await b.set_usable(False)

    assert await router.strategy.activate(b) is None
    assert await router.strategy.activate(Member("elsewhere")) is None
    assert router.strategy.active_service is a
