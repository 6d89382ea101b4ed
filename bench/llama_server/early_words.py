"""The ear's words so far, handed to her preparer for a prompt fill: the benches' stand-in for
the few lines companion/voice/turns/ear.py and companion/voice/loop.py do not have yet
(/work/notes/helper53.md gives them).

Her ear transcribes the utterance so far at every pause of 96 ms or more (its early
transcript, for the turn model and the reply prepared at a pause) and cancels that
transcription when the user goes on. `install(loop)` puts this in front of the ear's
transcriber (only the ear's: the final transcript is the words hearer's, a reference of its
own); each early transcript that finishes while the utterance is still open goes to
`loop.preparer.heard_so_far()` (brain/fill.py sends it ahead), and so does each partial
transcript of an engine that makes them while the user talks (Moonshine, every ~0.5 s).

With Whisper (~0.5-2 s for 10 s of speech here) no early transcript finished within a pause
between a long question's phrases, so the ear's cancel left no words at all. A transcription
begun on an idle thread runs to its end anyway, so that one is kept (shielded) and its words go
ahead when it ends; one that would wait behind it is left to the ear's cancel, as before
(keeping those too made the final transcript wait behind them on a loaded machine).

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
        self._running = 0

    async def transcribe(self, audio) -> str:
        if self._running:
            # One of hers is under way, so this one waits its turn on the thread: cancelled by
            # the ear (the user went on), it never runs and gives no words, as without this.
            text = await self.inner.transcribe(audio)
            self._heard(text)
            return text
        self._running += 1
        task = asyncio.ensure_future(self.inner.transcribe(audio))
        task.add_done_callback(self._done)
        return await asyncio.shield(task)  # begun at once: it runs to its end even if cancelled

    def _done(self, task: asyncio.Task) -> None:
        self._running -= 1
        if not task.cancelled() and task.exception() is None:
            self._heard(task.result())

    def _heard(self, text: str) -> None:
        if not text or not self.loop.ear.in_speech:
            return  # the utterance ended: these are its final words, the turn's own request follows
        self.words.append((time.monotonic(), text, self.loop.preparer.heard_so_far(text)))

    async def _partial(self, audio) -> str | None:
        text = await self.inner.partial(audio)
        self._heard(text or "")
        return text

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)  # an engine without partials (Whisper) has none here either
        return self._partial if name == "partial" else value


def install(loop: Any) -> EarlyWords:
    """Put EarlyWords in front of `loop`'s ear's transcriber (a VoiceLoop)."""
    words = EarlyWords(loop.ear.transcriber, loop)
    loop.ear.transcriber = words
    return words
