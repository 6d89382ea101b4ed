"""Endpointing: turns per-frame speech probabilities into utterances, with pre-roll and early pauses.

With a turn model the silence alone no longer ends a turn: at a short pause the endpointer
asks (TurnCheck) and the caller answers with conclude() when the model says the user has
finished; `end_silence_ms` is then only the patience for someone who is thinking.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from companion.voice.sound.frames import FRAME_S

TURN_CHECK_MS = 96
"""The pause after which the turn model is first asked, with the early transcript (on the pause
set, bench/turn_sweep.py, asking first at 192 ms cost ~40 ms more dead air for no fewer cuts)."""
RECHECK_MS = 96
"""While the rule says "not yet", ask again after this much more silence: the bar falls with
the silence, so a finished sentence is taken up as soon as the sound clears it (a check
due while the last one still runs is skipped, turn_end.TurnWatch)."""
CUT_WINDOW_S = 5.0
"""How long before the utterance's limit a gap between words may end it (a person reading on
with no pause long enough for a turn)."""
FALLBACK_SILENCE_MS = 500
"""Without the turn model, this much silence ends a turn (the old fixed rule)."""


@dataclass(frozen=True)
class EndpointSettings:
    start_threshold: float = 0.5
    """Speech probability that starts an utterance."""
    stop_threshold: float = 0.35
    """Once speaking, frames above this still count as speech (hysteresis)."""
    pre_roll_ms: int = 320
    """Audio kept from before the onset, so the first syllable is not clipped."""
    min_speech_ms: int = 160
    """Shorter bursts (clicks, knocks) are ignored."""
    pause_start_ms: int = 96
    """Silence after which a pause begins and early transcription starts."""
    end_silence_ms: int = 500
    """Silence that ends the utterance whatever the turn model says (its patience)."""
    turn_check_ms: int | None = None
    """Silence after which to ask whether the turn is over (None: no turn model, silence alone decides)."""
    recheck_ms: int = RECHECK_MS
    """While the model says "not finished", ask again after this much more silence."""
    max_utterance_s: float = 30.0
    """The longest utterance: Whisper hears 30 s at a time. Past `max_utterance_s -
    CUT_WINDOW_S` it ends at the first gap between words, so no word is split at the limit."""

    @classmethod
    def for_patience(cls, patience_ms: int, *, turn_model: bool) -> EndpointSettings:
        """From the user's setting: with a turn model it is the patience while they think;
        without one a fixed silence (no longer than that patience) ends the turn."""
        silence = patience_ms if turn_model else min(patience_ms, FALLBACK_SILENCE_MS)
        check = TURN_CHECK_MS if turn_model and silence > TURN_CHECK_MS else None
        return cls(end_silence_ms=silence, pause_start_ms=min(96, silence // 2), turn_check_ms=check)

    def __post_init__(self) -> None:
        if not 0 < self.stop_threshold <= self.start_threshold < 1:
            raise ValueError("VAD thresholds must satisfy 0 < stop <= start < 1")
        if self.pause_start_ms >= self.end_silence_ms:
            raise ValueError("a pause must start before the utterance ends")
        if self.recheck_ms <= 0 or (self.turn_check_ms is not None
                                    and self.turn_check_ms < self.pause_start_ms):
            raise ValueError("a turn check comes after the pause starts, and rechecks need a delay")
        if self.pre_roll_ms < 0 or self.min_speech_ms < 0 or self.max_utterance_s <= 0:
            raise ValueError("endpoint durations must be positive")


@dataclass(frozen=True)
class SpeechStarted:
    """Confirmed speech (longer than min_speech_ms); `at_s` is stream time of the onset."""

    at_s: float


@dataclass(frozen=True)
class PauseStarted:
    """A pause began: `audio` is the utterance so far; transcribe it early under `pause_id`."""

    pause_id: int
    audio: np.ndarray
    speech_end_s: float


@dataclass(frozen=True)
class TurnCheck:
    """Has the user finished? `audio` runs to now (the model hears the silence too); answer
    with Endpointer.conclude(pause_id) when yes. `silence_ms` is how long the pause is so far."""

    pause_id: int
    audio: np.ndarray
    silence_ms: float


@dataclass(frozen=True)
class SpeechResumed:
    """Speech came back, so the early transcript of `pause_id` is stale."""

    pause_id: int


@dataclass(frozen=True)
class UtteranceEnded:
    """The utterance is over. `pause_id` names the pause that ended it (None when capped at max length)."""

    audio: np.ndarray
    pause_id: int | None
    speech_end_s: float


EndpointEvent = SpeechStarted | PauseStarted | TurnCheck | SpeechResumed | UtteranceEnded


def _frames(ms: float) -> int:
    return max(1, round(ms / 1000 / FRAME_S))


class Endpointer:
    """Feed (frame, probability) pairs in order; get EndpointEvents back. Pure, no I/O."""

    def __init__(self, settings: EndpointSettings | None = None) -> None:
        self.settings = settings or EndpointSettings()
        s = self.settings
        self._pre_roll: deque[np.ndarray] = deque(maxlen=_frames(s.pre_roll_ms) if s.pre_roll_ms else 1)
        self._min_speech = _frames(s.min_speech_ms)
        self._pause_frames = _frames(s.pause_start_ms)
        self._end_frames = _frames(s.end_silence_ms)
        self._check_frames = _frames(s.turn_check_ms) if s.turn_check_ms is not None else None
        self._recheck_frames = _frames(s.recheck_ms)
        self._max_frames = _frames(s.max_utterance_s * 1000)
        self._cut_frames = max(1, self._max_frames - _frames(CUT_WINDOW_S * 1000))
        self._frame_index = 0
        self._pause_ids = 0
        self._reset()

    def _reset(self) -> None:
        self._active = False
        self._confirmed = False
        self._frames_in: list[np.ndarray] = []
        self._speech_frames = 0
        self._silence = 0
        self._pause: PauseStarted | None = None

    @property
    def stream_s(self) -> float:
        """Seconds of audio pushed so far (the stream time events are stamped with)."""
        return self._frame_index * FRAME_S

    @property
    def in_speech(self) -> bool:
        """True while a confirmed utterance is open."""
        return self._confirmed

    def audio_so_far(self) -> np.ndarray | None:
        """The open utterance's audio up to now (for partial transcripts), None outside one."""
        return np.concatenate(self._frames_in) if self._confirmed and self._frames_in else None

    @property
    def pause_id(self) -> int | None:
        """The pause now under way, if any."""
        return self._pause.pause_id if self._pause is not None else None

    @property
    def silence_ms(self) -> float:
        """How long the pause under way has lasted (0 while speech goes on)."""
        return self._silence * FRAME_S * 1000 if self._pause is not None else 0.0

    def _is_check_point(self) -> bool:
        check = self._check_frames
        if check is None or self._silence < check or self._silence >= self._end_frames:
            return False
        return (self._silence - check) % self._recheck_frames == 0

    def conclude(self, pause_id: int) -> list[EndpointEvent]:
        """The turn model says the user finished at `pause_id`: end the utterance now, unless
        speech has resumed since (then the answer is stale and nothing happens)."""
        pause = self._pause
        if pause is None or pause.pause_id != pause_id or not self._confirmed:
            return []
        self._reset()
        return [UtteranceEnded(pause.audio, pause.pause_id, pause.speech_end_s)]

    def drop(self) -> None:
        """Forget the utterance under way, if any (its audio was cut off)."""
        self._reset()

    def flush(self) -> list[EndpointEvent]:
        """The audio ended (a file ran out): an utterance still open ends here."""
        if not self._confirmed:
            self._reset()
            return []
        audio = np.concatenate(self._frames_in)
        pause, end_s = self._pause, self._frame_index * FRAME_S - self._silence * FRAME_S
        self._reset()
        if pause is not None:
            return [UtteranceEnded(pause.audio, pause.pause_id, pause.speech_end_s)]
        return [UtteranceEnded(audio, None, end_s)]

    def push(self, frame: np.ndarray, probability: float) -> list[EndpointEvent]:
        s = self.settings
        self._frame_index += 1
        now_s = self._frame_index * FRAME_S
        events: list[EndpointEvent] = []
        if not self._active:
            if probability >= s.start_threshold:
                self._active = True
                self._frames_in = [*self._pre_roll, frame]
                self._speech_frames = 1
                self._onset_s = now_s - FRAME_S
                self._pre_roll.clear()
            else:
                if s.pre_roll_ms:
                    self._pre_roll.append(frame)
                return events
            if self._speech_frames >= self._min_speech:
                self._confirmed = True
                events.append(SpeechStarted(self._onset_s))
            return events

        self._frames_in.append(frame)
        if probability >= s.stop_threshold:
            self._speech_frames += 1
            if self._pause is not None:
                events.append(SpeechResumed(self._pause.pause_id))
                self._pause = None
            self._silence = 0
            if not self._confirmed and self._speech_frames >= self._min_speech:
                self._confirmed = True
                events.append(SpeechStarted(self._onset_s))
        else:
            self._silence += 1
            if self._confirmed and self._silence == self._pause_frames:
                self._pause_ids += 1
                speech_end = now_s - self._silence * FRAME_S
                self._pause = PauseStarted(self._pause_ids, np.concatenate(self._frames_in), speech_end)
                events.append(self._pause)
            if self._pause is not None and self._is_check_point():
                events.append(TurnCheck(self._pause.pause_id, np.concatenate(self._frames_in),
                                        self._silence * FRAME_S * 1000))
            if self._silence >= self._end_frames:
                if self._confirmed and self._pause is not None:
                    events.append(UtteranceEnded(self._pause.audio, self._pause.pause_id, self._pause.speech_end_s))
                # An unconfirmed burst (a click) just disappears.
                self._reset()
                return events
        if self._confirmed and len(self._frames_in) >= self._cut_frames and self._silence:
            # Near the limit, a gap between words ends it: the next words start the next one whole.
            pause, end_s = self._pause, now_s - self._silence * FRAME_S
            audio = pause.audio if pause is not None else np.concatenate(self._frames_in)
            events.append(UtteranceEnded(audio, pause.pause_id if pause is not None else None, end_s))
            self._reset()
        elif self._confirmed and len(self._frames_in) >= self._max_frames:
            if self._pause is not None:
                events.append(SpeechResumed(self._pause.pause_id))
            events.append(UtteranceEnded(np.concatenate(self._frames_in), None, now_s))
            self._reset()
        return events
