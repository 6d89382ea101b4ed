"""Her mouth: a queue of lines, synthesized one ahead of playback, cancelled all at once."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from companion.events import SpeechKind
from companion.voice.audio import AudioSink
from companion.voice.echo import PlayedLine
from companion.voice.narration_cache import NarrationCache
from companion.voice.speech_filter import speakable
from companion.voice.tts import Synthesizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Line:
    text: str
    """As she wrote it (what the history keeps)."""
    kind: SpeechKind
    generation: int
    turn: int = 0
    """The turn it belongs to (0: none, e.g. a preview line)."""
    hold: int = 0
    """The hold it was prepared under (0: an ordinary line): drop_held() forgets those lines only."""


@dataclass
class SpeakerStats:
    synthesized: int = 0
    from_cache: int = 0


class Speaker:
    """say() queues a line; lines are filtered, synthesized (or taken from the narration cache)
    and played in order. cancel() drops everything queued and stops playback at once;
    interrupt() does so for the replies only, and a notice waiting to be said still plays.

    hold() shuts her mouth for a prepared reply: its lines (say(..., prepared=True)) are
    synthesized and wait with everything else; release() plays them, drop_held() forgets
    only them, so a notice queued meanwhile still plays.
    """

    def __init__(self, synthesizer: Synthesizer, sink: AudioSink, cache: NarrationCache | None = None) -> None:
        self._synth = synthesizer
        self._sink = sink
        self.cache = cache
        self._generation = 0
        self._hold = 0
        self._dropped_holds: set[int] = set()
        self._last_turn = 0
        self._turns_dropped_through = 0
        self._holds_dropped_through = 0
        """Reply lines of turns and holds up to these were interrupted."""
        self._current: Line | None = None
        """The line being played."""
        self._text_queue: asyncio.Queue[Line] = asyncio.Queue()
        self._audio_queue: asyncio.Queue[tuple[Line, np.ndarray]] = asyncio.Queue()
        self._pending = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._play_gate = asyncio.Event()
        self._play_gate.set()
        self.playing = False
        self.played: list[Line] = []
        """Lines of the current generation that were played to the end."""
        self.recent_played: deque[PlayedLine] = deque(maxlen=8)
        """Her last lines with when they played (time.monotonic()), to recognise her own echo."""
        self.stats = SpeakerStats()
        self.last_synthesis_ms = 0.0
        """How long the line just synthesized took (0 when it came from the narration cache)."""
        self.on_synthesized: Callable[[Line], None] | None = None
        self.on_playing: Callable[[Line], None] | None = None
        self.on_idle: Callable[[], None] | None = None
        self._tasks = [
            asyncio.get_running_loop().create_task(self._synthesize_lines()),
            asyncio.get_running_loop().create_task(self._play_lines()),
        ]

    @property
    def idle(self) -> asyncio.Event:
        """Set while nothing is queued or playing."""
        return self._idle

    @property
    def busy(self) -> bool:
        """Something is queued or playing (lines held for a prepared reply don't count: she is
        not talking yet)."""
        return self.playing or (not self._idle.is_set() and not self.holding)

    def say(self, text: str, kind: SpeechKind = SpeechKind.SAY, turn: int = 0, *, prepared: bool = False) -> None:
        """Queue a line; `prepared`: a line of the reply prepared under the current hold()."""
        self._pending += 1
        self._idle.clear()
        self._last_turn = max(self._last_turn, turn)
        self._text_queue.put_nowait(Line(text, kind, self._generation, turn, self._hold if prepared else 0))

    @property
    def holding(self) -> bool:
        """Lines are being prepared but not played (a reply waiting for the user to finish)."""
        return not self._play_gate.is_set()

    def hold(self) -> None:
        """Lines said from now on are synthesized but wait; release() plays them, cancel() drops
        them all, drop_held() drops the prepared ones."""
        self._hold += 1
        self._play_gate.clear()

    def release(self) -> None:
        self._play_gate.set()

    def cancel(self) -> list[Line]:
        """Stop playback and drop every queued line; returns the lines that were fully played."""
        played, self.played = self.played, []
        self._generation += 1
        self._play_gate.set()
        for queue in (self._text_queue, self._audio_queue):
            while not queue.empty():
                queue.get_nowait()
                self._done_one()
        self._sink.stop()
        return played

    def interrupt(self) -> list[Line]:
        """The turn she speaks for was interrupted: stop the line playing (the user talked over
        it) and drop every reply line, prepared or not; a notice still waiting (her voice
        server gone) plays next. Returns the lines of this generation played to the end."""
        played, self.played = self.played, []
        # Turns and holds only grow: whatever comes later belongs to a new turn.
        self._turns_dropped_through, self._holds_dropped_through = self._last_turn, self._hold
        self._play_gate.set()
        self._drop_unwanted()
        self._sink.stop()
        return played

    def drop_held(self) -> None:
        """Forget the lines prepared under the current hold and open her mouth again; every
        other line (a notice said meanwhile, a line already playing) goes on."""
        self._dropped_holds.add(self._hold)
        self._play_gate.set()
        self._drop_unwanted()
        if self._current is not None and not self._wanted(self._current):
            self._sink.stop()

    def _drop_unwanted(self) -> None:
        for queue in (self._text_queue, self._audio_queue):
            kept = []
            while not queue.empty():
                item = queue.get_nowait()
                if self._wanted(item if isinstance(item, Line) else item[0]):
                    kept.append(item)
                else:
                    self._done_one()
            for item in kept:
                queue.put_nowait(item)

    def _wanted(self, line: Line) -> bool:
        return (line.generation == self._generation and line.hold not in self._dropped_holds
                and not 0 < line.hold <= self._holds_dropped_through
                and not 0 < line.turn <= self._turns_dropped_through)

    def new_turn(self) -> None:
        self.played = []

    def _done_one(self) -> None:
        self._pending -= 1
        if self._pending <= 0:
            self._pending = 0
            self._idle.set()
            if self.on_idle:
                self.on_idle()

    async def _synthesize_lines(self) -> None:
        while True:
            line = await self._text_queue.get()
            try:
                audio = await self._audio_for(line)
            except Exception:
                log.exception("could not synthesize %r", line.text)
                audio = None
            if audio is None or not self._wanted(line):
                self._done_one()
                continue
            if self.on_synthesized:
                self.on_synthesized(line)
            self._audio_queue.put_nowait((line, audio))

    async def _audio_for(self, line: Line) -> np.ndarray | None:
        if self.cache is not None:
            cached = self.cache.get(line.text)
            if cached is not None:
                self.stats.from_cache += 1
                self.last_synthesis_ms = 0.0
                return cached
        words = speakable(line.text)
        if not words:
            return None
        self.stats.synthesized += 1
        started = time.monotonic()
        audio = await self._synth.synthesize(words)
        self.last_synthesis_ms = (time.monotonic() - started) * 1000
        log.debug("synthesized %r in %.0f ms", words[:40], self.last_synthesis_ms)
        return audio

    async def _play_lines(self) -> None:
        while True:
            line, audio = await self._audio_queue.get()
            try:
                await self._play_gate.wait()
                if not self._wanted(line):
                    continue
                self.playing = True
                self._current = line
                record = PlayedLine(speakable(line.text), time.monotonic())
                self.recent_played.append(record)
                if self.on_playing:
                    self.on_playing(line)
                try:
                    finished = await self._sink.play(audio, self._synth.sample_rate)
                finally:
                    record.ended = time.monotonic()
                    self._current = None
                if finished and self._wanted(line):
                    self.played.append(line)
            except Exception:
                log.exception("playback failed")
            finally:
                self.playing = not self._audio_queue.empty()
                self._done_one()

    async def close(self) -> None:
        self.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
