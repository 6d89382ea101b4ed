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
from companion.voice.sound.audio import AudioSink
from companion.voice.speaking.echo import PlayedLine
from companion.voice.speaking.narration_cache import NarrationCache
from companion.voice.speaking.speech_filter import speakable
from companion.voice.speaking.tts import Synthesizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Line:
    text: str
    """As she wrote it (what the history keeps)."""
    kind: SpeechKind
    serial: int
    """Lines are numbered as they are said: cancel() drops those said before it."""
    turn: int = 0
    """The turn it belongs to (0: none, e.g. a preview line)."""
    hold: int = 0
    """The hold it was prepared under (0: an ordinary line): drop_held() forgets those lines only."""
    notice: bool = False
    """About her, not part of any turn (her voice server gone): no cancel, interruption or
    dropped preparation takes it away, and it plays to its end; only closing her voice does."""


@dataclass
class SpeakerStats:
    synthesized: int = 0
    from_cache: int = 0


class Speaker:
    """say() queues a line; lines are filtered, synthesized (or taken from the narration cache)
    and played in order. cancel() drops every line queued and stops the one playing, at once;
    interrupt(turn) does so for that turn's lines only. Neither touches a notice
    (say(..., notice=True)): one waiting still plays, one playing plays to its end.

    hold() shuts her mouth for a prepared reply: its lines (say(..., prepared=True)) are
    synthesized and wait with everything else; release() plays them, drop_held() forgets
    only them, so a notice queued meanwhile still plays.

    pause() stops her mid-line without dropping anything (someone may only be saying "mm-hm"):
    resume() says the rest of that line from the word she was in, then the lines queued behind
    it; a cancel or interruption drops it all as ever. A line is played once however often it
    was paused, and counts as played only when its end was.
    """

    def __init__(self, synthesizer: Synthesizer, sink: AudioSink, cache: NarrationCache | None = None) -> None:
        self._synth = synthesizer
        self._sink = sink
        self.cache = cache
        self._serial = 0
        self._cancelled_through = 0
        """Lines numbered up to this were cancelled (notices excepted)."""
        self._closed = False
        self._hold = 0
        self._dropped_holds: set[int] = set()
        self._last_turn = 0
        self._dropped_turns: set[int] = set()
        self._holds_dropped_through = 0
        """Prepared lines of holds up to this were interrupted."""
        self._current: Line | None = None
        """The line being played."""
        self._text_queue: asyncio.Queue[Line] = asyncio.Queue()
        self._audio_queue: asyncio.Queue[tuple[Line, np.ndarray]] = asyncio.Queue()
        self._pending = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._play_gate = asyncio.Event()
        self._play_gate.set()
        self._resume_gate = asyncio.Event()
        """Clear while paused (pause()): nothing plays until resume()."""
        self._resume_gate.set()
        self._cut: Line | None = None
        """The line a pause stopped (its rest is kept however soon she resumes)."""
        self._again: tuple[Line, np.ndarray] | None = None
        """The rest of the line a pause cut short: played first on resume()."""
        self._line_started: float | None = None
        """time.monotonic() the line playing reached the speaker (the sink's start listener)."""
        sink.add_start_listener(self._started)
        self.playing = False
        self.played: list[Line] = []
        """Lines played to the end since the last cancel, interruption or new turn."""
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

    def use_voice(self, synthesizer: Synthesizer) -> None:
        """Her next lines in another voice at the same sample rate (lines already made play as they are)."""
        self._synth = synthesizer

    def say(self, text: str, kind: SpeechKind = SpeechKind.SAY, turn: int = 0, *, prepared: bool = False,
            notice: bool = False) -> None:
        """Queue a line; `prepared`: a line of the reply prepared under the current hold();
        `notice`: about her, for no turn (see Line.notice)."""
        self._pending += 1
        self._idle.clear()
        self._last_turn = max(self._last_turn, turn)
        self._serial += 1
        self._text_queue.put_nowait(Line(text, kind, self._serial, turn, self._hold if prepared else 0,
                                         notice and not prepared and turn == 0))

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

    @property
    def paused(self) -> bool:
        """pause() stopped her and she has not resumed (nor been cancelled or interrupted)."""
        return not self._resume_gate.is_set()

    def pause(self) -> bool:
        """Stop the line playing, keeping it and everything queued, until resume(); True when
        she was saying (or about to say) something. Notices are not paused."""
        current = self._current
        if self.paused or self._closed or (current is None and not self.busy):
            return False
        if current is not None and current.notice:
            return False
        self._resume_gate.clear()
        self.playing = False
        if current is not None:
            self._cut = current
            self._sink.stop()  # _play_lines keeps the rest of it for resume()
        return True

    def resume(self) -> None:
        """Go on from the word the pause cut short (nothing, if cancelled meanwhile)."""
        self._resume_gate.set()

    def _started(self, when: float) -> None:
        self._line_started = when

    def cancel(self) -> list[Line]:
        """Stop the line playing and drop every line queued, except notices (one waiting plays
        next, one playing goes on); returns the lines played to the end since the last cancel."""
        played, self.played = self.played, []
        self._cancelled_through = self._serial
        self._play_gate.set()
        self._resume_gate.set()
        self._drop_unwanted()
        self._stop_unwanted()
        return played

    def interrupt(self, turn: int | None = None) -> list[Line]:
        """Turn `turn` was interrupted (None: whichever she speaks for): stop its line playing
        (the user talked over it) and drop its lines and every prepared one; other turns'
        lines and notices stay. Returns the lines played to the end since the last cancel,
        interruption or new turn."""
        played, self.played = self.played, []
        if turn is None:
            self._dropped_turns.update(range(1, self._last_turn + 1))
        else:
            # Its lines said after this moment (late events) are dropped too.
            self._dropped_turns.add(turn)
        # Holds only grow: a hold opened later belongs to a new preparation.
        self._holds_dropped_through = self._hold
        self._play_gate.set()
        self._resume_gate.set()
        self._drop_unwanted()
        self._stop_unwanted()
        return played

    def drop_held(self) -> None:
        """Forget the lines prepared under the current hold and open her mouth again; every
        other line (a notice said meanwhile, a line already playing) goes on."""
        self._dropped_holds.add(self._hold)
        self._play_gate.set()
        self._drop_unwanted()
        self._stop_unwanted()

    def _stop_unwanted(self) -> None:
        if self._current is not None and not self._wanted(self._current):
            self._sink.stop()

    def _drop_unwanted(self) -> None:
        if self._again is not None and not self._wanted(self._again[0]):
            self._again = None
            self._done_one()
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
        if self._closed:
            return False
        if line.notice:
            return True
        return (line.serial > self._cancelled_through and line.hold not in self._dropped_holds
                and not 0 < line.hold <= self._holds_dropped_through and line.turn not in self._dropped_turns)

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

    async def _next_to_play(self) -> tuple[Line, np.ndarray, bool]:
        """The rest of a paused line first (once resumed), then the queue; True for a rest."""
        await self._resume_gate.wait()
        if self._again is not None:
            (line, rest), self._again = self._again, None
            return line, rest, True
        line, audio = await self._audio_queue.get()
        return line, audio, False

    async def _play_lines(self) -> None:
        while True:
            line, audio, is_rest = await self._next_to_play()
            again = False
            try:
                await self._play_gate.wait()
                await self._resume_gate.wait()
                if not self._wanted(line):
                    continue
                self.playing = True
                self._current = line
                self._line_started = None
                record = PlayedLine(speakable(line.text), time.monotonic())
                self.recent_played.append(record)
                if self.on_playing:
                    self.on_playing(line)
                try:
                    finished = await self._sink.play(audio, self._synth.sample_rate)
                finally:
                    record.ended = time.monotonic()
                    self._current = None
                cut, self._cut = self._cut is line, None
                if not finished and cut and self._wanted(line):
                    at = resume_from(audio, self._synth.sample_rate, self._line_started, record.ended,
                                     from_start_under_s=0.0 if is_rest else FROM_START_UNDER_S)
                    rest = audio[at:]
                    # Cut off at its very end, it was heard: played, as if it had finished.
                    finished = rest.size == 0
                    if rest.size:
                        self._again, again = (line, rest), True
                if finished and self._wanted(line):
                    self.played.append(line)
            except Exception:
                log.exception("playback failed")
            finally:
                self.playing = not self.paused and not self._audio_queue.empty()
                if not again:  # the line is still to be said: it stays pending
                    self._done_one()

    async def close(self) -> None:
        """Her voice is going away: everything queued goes, notices too."""
        self._closed = True
        for task in self._tasks:
            task.cancel()
        # Cancelled before the sink is stopped: a stop landing first completes the wait the
        # player is in, and asyncio.wait_for (3.11) then swallows the cancellation (WavSink's
        # pacing): the player would wait on its queue for ever and close() with it.
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.cancel()
        self._sink.stop()


RESUME_BACK_S = 0.6
"""How far before the stop a resumed line may start again: back to the quietest moment there
(a gap between words, most often), so she goes on from the word she was cut off in."""
FROM_START_UNDER_S = 1.0
"""A line stopped this early is said again from its start (its few words were barely heard).
Not the rest of a line already resumed: stopped again early, it would start where it started
before, and a stop at each onset (her own echo) would keep her there."""


def resume_from(audio: np.ndarray, rate: int, started: float | None, stopped: float, *,
                from_start_under_s: float = FROM_START_UNDER_S) -> int:
    """The sample a paused line goes on from: the quietest 20 ms within RESUME_BACK_S before
    where it was stopped (from the start when that is under `from_start_under_s` in, or unknown)."""
    if started is None:
        return 0
    at = int((stopped - started) * rate)
    if at >= audio.size:
        return audio.size
    if at < from_start_under_s * rate:
        return 0
    block = max(1, rate // 50)
    earliest = max(0, at - int(RESUME_BACK_S * rate))
    starts = range(earliest, at - block + 1, block)
    quietest = min(starts, key=lambda i: float(np.mean(np.abs(audio[i:i + block]))), default=earliest)
    return quietest
