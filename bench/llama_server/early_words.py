"""The ear's words so far, handed to her preparer for a prompt fill: the benches' stand-in for
the few lines companion/voice/turns/ear.py and companion/voice/loop.py do not have yet
(/work/notes/helper53.md gives them).

Her ear transcribes the utterance so far at every pause of 96 ms or more (its early
transcript, for the turn model and the reply prepared at a pause) and cancels that
transcription when the user goes on. It runs on Whisper's own thread and finishes anyway once
begun, so nothing is saved by dropping its words: `install(loop)` puts this in front of the
ear's transcriber (only the ear's: the final transcript is the words hearer's, a transcriber of
its own reference), and each early transcript that finishes while the utterance is still open
goes to `loop.preparer.heard_so_far()` (brain/fill.py sends it ahead), even when the user went
on meanwhile. An engine with partial transcripts while the user talks (Moonshine, every ~0.5 s)
hands each of those on too.

`early_voice.py` runs `companion voice` with it installed, for the black-box bench.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any


class EarlyWords:
    def __init__(self, transcriber: Any, loop: Any) -> None:
        self.inner = transcriber
        self.loop = loop
        self.words: list[tuple[float, str, bool]] = []
        """(monotonic time, words so far, whether a fill went) per early transcript heard."""

    async def transcribe(self, audio) -> str:
        task = asyncio.ensure_future(self.inner.transcribe(audio))
        task.add_done_callback(self._heard)
        return await asyncio.shield(task)  # the ear cancelling it leaves the words to the fill

    def _heard(self, task: asyncio.Task) -> None:
        ear = self.loop.ear
        if task.cancelled() or task.exception() is not None or not task.result() or not ear.in_speech:
            return  # the utterance ended: these are its final words, the turn's own request follows
        sent = self.loop.preparer.heard_so_far(task.result())
        self.words.append((time.monotonic(), task.result(), sent))

    async def _partial(self, audio) -> str | None:
        text = await self.inner.partial(audio)
        if text and self.loop.ear.in_speech:
            self.words.append((time.monotonic(), text, self.loop.preparer.heard_so_far(text)))
        return text

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)  # an engine without partials (Whisper) has none here either
        return self._partial if name == "partial" else value


def install(loop: Any) -> EarlyWords:
    """Put EarlyWords in front of `loop`'s ear's transcriber (a VoiceLoop)."""
    words = EarlyWords(loop.ear.transcriber, loop)
    loop.ear.transcriber = words
    return words
