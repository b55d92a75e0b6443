"""pipecat's Whisper STT on a model loaded beforehand.

``WhisperSTTService`` loads its model in its constructor, through its
``_load`` step (which pipecat's MLX service overrides the same way), into
``_model``; pinned pipecat 1.14 has no argument to hand it a loaded one.
``PreloadedWhisperSTTService`` overrides ``_load`` to take the model given
and runs pipecat's language check (``_unsupported_language``) as pipecat's
``_load`` does.
"""

from __future__ import annotations

from typing import Any

from pipecat.services.whisper.stt import WhisperSTTService


class PreloadedWhisperSTTService(WhisperSTTService):
    """pipecat's Whisper STT on ``model``, a faster-whisper model already loaded.

    Args:
        model: The loaded model.
        **kwargs: ``WhisperSTTService``'s own arguments.

    Raises:
        ValueError: the settings ask for a language the model cannot hear.
    """

    def __init__(self, *, model: Any, **kwargs: Any) -> None:
        self._preloaded_model = model
        super().__init__(**kwargs)

    def _load(self) -> None:
        self._model = self._preloaded_model
        unsupported = self._unsupported_language()
        if unsupported:
            raise ValueError(unsupported)
