"""Narration lines synthesized ahead of time, so an ANNOUNCE or HEARTBEAT costs no synthesis."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Iterable

import numpy as np

from companion.memory import release_free_memory
from companion.voice.speaking.speech_filter import speakable
from companion.voice.speaking.tts import Synthesizer

log = logging.getLogger(__name__)

_MADE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Each live synthesizer's latest full set of lines: a voice session opened again on the same
engine (Settings applied, the sound device back) takes them at once instead of spending ~12 s
of processor making her ~80 lines again. Held only as long as the engine lives."""


class NarrationCache:
    """Audio for known lines, keyed by their speakable text and how she speaks (speed, pitch,
    variation)."""

    def __init__(self, synthesizer: Synthesizer) -> None:
        self._synth = synthesizer
        self._audio: dict[tuple, np.ndarray] = {}
        self._task: asyncio.Task | None = None
        self.ready = asyncio.Event()
        """Set once the latest set of lines is all synthesized."""
        self._quiet = asyncio.Event()
        self._quiet.set()

    def set_busy(self, busy: bool) -> None:
        """While she listens to speech or answers, background synthesis waits (live speech first)."""
        if busy:
            self._quiet.clear()
        else:
            self._quiet.set()

    def _key(self, text: str) -> tuple:
        synth = self._synth
        return (speakable(text), float(getattr(synth, "speed", 1.0)), float(getattr(synth, "pitch", 0.0)),
                tuple(getattr(synth, "variation", ())))

    def use_voice(self, synthesizer: Synthesizer) -> None:
        """Lines in another voice from now on: what was made in the old one is forgotten."""
        self._synth = synthesizer
        self._audio.clear()

    def get(self, text: str) -> np.ndarray | None:
        return self._audio.get(self._key(text))

    def clear(self) -> None:
        """Forget every line (the next refresh synthesizes them all again)."""
        self._audio.clear()

    def __len__(self) -> int:
        return len(self._audio)

    def refresh(self, lines: Iterable[str]) -> asyncio.Task:
        """Synthesize `lines` in the background (at start, and when the personality or speed changes).

        Lines already cached are kept; lines no longer listed are dropped.
        """
        wanted = list(dict.fromkeys(line for line in lines if speakable(line)))
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self.ready.clear()
        self._task = asyncio.get_running_loop().create_task(self._fill(wanted))
        return self._task

    async def _fill(self, lines: list[str]) -> None:
        keys = {self._key(line): line for line in lines}
        for key in [k for k in self._audio if k not in keys]:
            del self._audio[key]
        made = _made_by(self._synth)
        synthesized = False
        for key, line in keys.items():
            if key in self._audio:
                continue
            if key in made:
                self._audio[key] = made[key]
                continue
            await self._quiet.wait()
            try:
                self._audio[key] = await self._synth.synthesize(key[0])
                synthesized = True
            except Exception:
                log.exception("could not pre-synthesize narration line %r", line)
        with contextlib.suppress(TypeError):  # an engine that can't be weakly referenced keeps its own
            _MADE[self._synth] = dict(self._audio)
        if synthesized:
            await asyncio.to_thread(release_free_memory)  # what synthesizing them all allocated
        self.ready.set()

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _made_by(synthesizer: Synthesizer) -> dict:
    try:
        return _MADE.get(synthesizer, {})
    except TypeError:
        return {}
