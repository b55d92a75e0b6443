"""A judge for the ``eval:`` criteria of pipecat eval scenarios, keyed from the environment.

pipecat's judge asks a local Ollama by default; a scenario names another
with a factory in its ``judge:`` block, which pipecat's eval client imports
and calls with that block. ``openai`` judges with the OpenAI key a team's
real models already use::

    judge:
      eval:
        factory: playground.eval_judge.openai
        model: gpt-4.1-mini          # optional
        endpoint: https://...        # optional; else OPENAI_BASE_URL, else OpenAI's

It runs in pipecat eval's process, not the runner's.
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
            "judge.eval factory playground.eval_judge.openai needs a key: "
            "set OPENAI_API_KEY, or api_key in the judge.eval block"
        )
    return OpenAILLMService(
        api_key=key,
        base_url=config.get("endpoint") or os.environ.get("OPENAI_BASE_URL") or None,
        settings=OpenAILLMService.Settings(
            model=config.get("model") or DEFAULT_MODEL, extra=dict(config.get("extra") or {})
        ),
    )
