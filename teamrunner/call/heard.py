"""What the caller heard of a reply: its words timed by when the media server plays them.

After a barge-in the context should keep only what the caller could have
heard. A voice with word timestamps (Cartesia, ElevenLabs) gives each word a
presentation time; the output transport releases it to the context
aggregator at that time, a barge-in drops the words not yet released, and
pipecat ends the reply's context entry at the last word it timed. A voice
without them (Piper, espeak, any that sends none) hands over each sentence
whole once its audio is made, which, with output unpaced, is long before it
is played; a barge-in then finds the whole reply in the context.

And a voice with word timestamps counts them from when it made its audio,
and keeps its own words in order, but knows nothing of audio the media
server already holds from another voice. At a handoff the next member's
voice starts making audio as soon as the previous one has made its line,
while the caller is still hearing that line: its words were timed inside the
line, reached the context among the line's own words, and were written into
the previous member's entry. ``HeardWords`` moves such words by what the
media server holds ahead of their audio, so every word reaches the context
when it is played, after the words played before it.

``HeardWords``, just before the output transport, gives such a sentence the
same treatment: it becomes one text frame per word, each timed at the moment
the media server will play it, counting from when it would start playing
the sentence's first chunk (``playout.PlayoutClock``, fed the audio as it
passes), with the sentence's audio spread over its words by their length;
and the reply's end frame is timed after its last word, as pipecat times it
for word timestamps. The rest is pipecat's own mechanism.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    LLMAssistantPushAggregationFrame,
    LLMFullResponseEndFrame,
    OutputAudioRawFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from teamrunner.audio import NS_PER_SEC, audio_secs
from teamrunner.call.playout import PlayoutClock

_WORD = re.compile(r"\S+")

# How many voice contexts' playout delays are kept: one is in use at a time.
_CONTEXTS_KEPT = 8


class HeardWords(FrameProcessor):
    """Times the words of sentences a voice sends untimed, by when the caller will hear them."""

    def __init__(self) -> None:
        super().__init__(name="HeardWords")
        self._clock = PlayoutClock()
        # For each voice context: the playout span of its audio since its last sentence.
        self._unspoken: dict[str, tuple[float, float]] = {}
        # The presentation time given to the last estimated word of the open reply.
        self._last_word_pts = 0
        # For each voice context: how long its first audio waits behind what the
        # media server already holds, in nanoseconds.
        self._held_back: OrderedDict[str, int] = OrderedDict()
        # The presentation time of the last word a voice timed itself, once moved.
        self._last_timed_pts = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            now = self.get_clock().get_time() / NS_PER_SEC
            if isinstance(frame, InterruptionFrame):
                self._clock.flush(now)
                self._unspoken.clear()
                self._last_word_pts = 0
                # What was held back was dropped: what comes next plays at once.
                self._held_back.clear()
                self._last_timed_pts = 0
            elif isinstance(frame, OutputAudioRawFrame):
                start, end = self._clock.add(audio_secs(frame), now)
                if isinstance(frame, TTSAudioRawFrame) and frame.context_id:
                    first = self._unspoken.get(frame.context_id, (start, end))[0]
                    self._unspoken[frame.context_id] = (first, end)
                    if frame.context_id not in self._held_back:
                        self._note_first_audio(frame.context_id, start - now)
            elif type(frame) is TTSTextFrame and frame.pts:
                frame.pts = self._played_pts(frame)
            elif type(frame) is TTSTextFrame and frame.append_to_context:
                for word in self._words(frame, now):
                    await self.push_frame(word, direction)
                return
            elif (
                isinstance(frame, (LLMFullResponseEndFrame, LLMAssistantPushAggregationFrame))
                and frame.pts
            ):
                # Its voice timed it at its last word, which may have been moved.
                frame.pts = max(frame.pts, self._last_timed_pts)
            elif (
                isinstance(frame, (LLMFullResponseEndFrame, LLMAssistantPushAggregationFrame))
                and not frame.pts
                and self._last_word_pts
            ):
                # After the reply's last word; otherwise the context would be
                # written before the words reach it.
                frame.pts = self._last_word_pts
                self._last_word_pts = 0
        await self.push_frame(frame, direction)

    def _note_first_audio(self, context_id: str, waits_secs: float) -> None:
        """The first audio of ``context_id`` plays ``waits_secs`` after it was made."""
        self._held_back[context_id] = int(waits_secs * NS_PER_SEC)
        if len(self._held_back) > _CONTEXTS_KEPT:
            self._held_back.popitem(last=False)

    def _played_pts(self, word: TTSTextFrame) -> int:
        """A word its voice timed from when its audio was made, timed when it is played."""
        moved = (word.pts or 0) + self._held_back.get(word.context_id or "", 0)
        self._last_timed_pts = max(moved, self._last_timed_pts)
        return self._last_timed_pts

    def _words(self, sentence: TTSTextFrame, now: float) -> list[TTSTextFrame]:
        """``sentence`` as one frame per word, each timed when the caller will hear it."""
        start, end = self._unspoken.pop(sentence.context_id or "", (now, now))
        text = sentence.text
        words = []
        for match in _WORD.finditer(text):
            at = start + (end - start) * match.start() / max(len(text), 1)
            word = TTSTextFrame(
                text=match.group(0), text_type=sentence.text_type, segment_id=sentence.segment_id
            )
            word.context_id = sentence.context_id
            word.append_to_context = True
            word.interruptible = sentence.interruptible
            # Never before the word ahead of it (and pts 0 would mean "untimed").
            word.pts = max(int(at * NS_PER_SEC), self._last_word_pts, 1)
            self._last_word_pts = word.pts
            words.append(word)
        return words
