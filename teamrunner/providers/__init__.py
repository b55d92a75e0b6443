"""Providers by kind: ``LLM``, ``STT`` and ``TTS`` registries, and the specs they build from.

Importing this package registers every provider; building one imports its
vendor code only then.
"""

from teamrunner.providers.llm import LLM, split_model
from teamrunner.providers.specs import LLMSpec, STTSpec, TTSSpec
from teamrunner.providers.stt import STT
from teamrunner.providers.tts import TTS

__all__ = ["LLM", "STT", "TTS", "LLMSpec", "STTSpec", "TTSSpec", "split_model"]
