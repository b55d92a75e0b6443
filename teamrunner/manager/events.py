"""The RTVI messages pipecat-manager reads, and the one the runner sends it on an error.

pipecat-manager turns ``user-transcription`` (final), ``user-llm-text``,
``bot-llm-text``, ``bot-transcription``, ``bot-llm-stopped`` and ``error``
messages into events, and ignores every other RTVI message. So the runner
sends only those (``MANAGER_MESSAGES``): pipecat's defaults add a message per
spoken word, per metric, per speaking state and per function call, each of
which Go parses and drops. ``ManagerRTVI`` is the call's RTVI processor over
pipecat-manager's sockets; how a call sends its messages, straight to the
output socket, is ``teamrunner.call.rtvi``'s.
"""

from __future__ import annotations

from pipecat.frames.frames import OutputTransportMessageUrgentFrame
from pipecat.observers.base_observer import BaseObserver
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIObserverParams
from pipecat.processors.frameworks.rtvi import models as rtvi
from pipecat.processors.frameworks.rtvi.observer import RTVIFunctionCallReportLevel

from teamrunner.call.rtvi import CallRTVI, RTVIMessages

# Only what pipecat-manager reads (see models/pipecatframe/helper.go on the Go side).
MANAGER_READS = frozenset(
    {
        "user-transcription",
        "user-llm-text",
        "bot-llm-text",
        "bot-transcription",
        "bot-llm-stopped",
        "error",
    }
)

MANAGER_MESSAGES = RTVIMessages(
    params=RTVIObserverParams(
        bot_llm_enabled=True,  # bot-llm-started/-text/-stopped, bot-transcription
        user_llm_enabled=True,  # user-llm-text
        user_transcription_enabled=True,  # user-transcription
        bot_output_enabled=False,
        bot_tts_enabled=False,
        bot_speaking_enabled=False,
        user_speaking_enabled=False,
        user_mute_enabled=False,
        user_input_enabled=False,
        metrics_enabled=False,
        function_call_report_level={"*": RTVIFunctionCallReportLevel.DISABLED},
    ),
    # The message types pipecat-manager turns into events; any other is not sent.
    reads=MANAGER_READS,
)


class ManagerRTVI(CallRTVI):
    """The call's RTVI processor over pipecat-manager's sockets: it sends only what Go reads.

    Args:
        output: The output transport of the socket to pipecat-manager.
        companion: An observer of first pushes to hand each frame to, first.
    """

    def __init__(self, output: FrameProcessor, companion: BaseObserver | None = None) -> None:
        super().__init__(output, MANAGER_MESSAGES, companion=companion)


def rtvi_error(error: str, *, fatal: bool) -> OutputTransportMessageUrgentFrame:
    """An RTVI ``error`` message for pipecat-manager, in pipecat's own model of one."""
    message = rtvi.Error(data=rtvi.ErrorData(error=error, fatal=fatal))
    return OutputTransportMessageUrgentFrame(message=message.model_dump())
